"""Audit a labelled corpus of real submissions and print its score table.

    python scripts/score_corpus.py --corpus CORPUS_DIR --scorer SCORE_PY [--alias ALIASES_JSON]
    python scripts/score_corpus.py --build BUILD_PY --git GIT_DIR --corpus CORPUS_DIR --scorer SCORE_PY

With --build, the corpus is built first (`BUILD_PY GIT_DIR --out CORPUS_DIR`, from a git dir of
openai/parameter-golf that holds the PR heads). Every case `<CORPUS_DIR>/<id>/folder` is then
audited with `pgolf audit --format json --no-smoke` in a subprocess of its own (--jobs at a time,
each bounded by --timeout), with the PR's changed paths from `<id>/CASE.json` (`--changed-files`),
the JSON written to `--out/<id>.json`, and the scorer run on that directory. The wall time of the audits is printed last.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import subprocess
import sys
import time
from pathlib import Path


def audit(folder: Path, out: Path, timeout: float) -> str:
    """Audit one case into `out`; returns a line saying what went wrong, or ""."""
    command = [sys.executable, "-m", "pgolf_cli", "audit", "--format", "json", "--no-smoke", str(folder)]
    case = folder.parent / "CASE.json"
    meta = json.loads(case.read_text()) if case.is_file() else {}
    if meta.get("pr_files_in_folder"):  # the PR's change: the folder's files at its place, and the rest
        lines = [f"{f['status']}\t{meta['folder']}/{f['path']}" for f in meta["pr_files_in_folder"]]
        lines += [f"{f['status']}\t{f['path']}" for f in meta.get("pr_files_outside_folder", [])]
        changes = out.with_suffix(".changes")
        changes.write_text("".join(line + "\n" for line in lines))
        command[-1:-1] = ["--changed-files", str(changes)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"{folder.parent.name}: timed out after {timeout:g} s"
    out.write_text(done.stdout)
    if done.returncode not in (0, 1):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{folder.parent.name}: exit {done.returncode}: {last}"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="built cases: <id>/folder")
    parser.add_argument("--scorer", type=Path, required=True, help="the corpus' score script")
    parser.add_argument("--alias", type=Path, help="rule aliases for the scorer")
    parser.add_argument("--build", type=Path, help="the corpus' build script (builds --corpus first)")
    parser.add_argument("--git", type=Path, help="with --build: the git dir holding the PR heads")
    parser.add_argument("--out", type=Path, default=Path("corpus-audit"), help="where the JSON goes")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    args = parser.parse_args()
    if args.build is not None:
        if args.git is None:
            parser.error("--build needs --git")
        subprocess.run([sys.executable, str(args.build), str(args.git), "--out", str(args.corpus)],
                       check=True)
    cases = sorted(p for p in args.corpus.glob("*/folder") if p.is_dir())
    if not cases:
        parser.error(f"no <id>/folder under {args.corpus}")
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        problems = [p for p in pool.map(lambda c: audit(c, args.out / f"{c.parent.name}.json",
                                                        args.timeout), cases) if p]
    seconds = time.monotonic() - start
    command = [sys.executable, str(args.scorer), str(args.out)]
    if args.alias is not None:
        command += ["--alias", str(args.alias)]
    scored = subprocess.run(command)
    for problem in problems:
        print(problem)
    print(f"audited {len(cases)} cases in {seconds:.1f} s with {args.jobs} jobs")
    return scored.returncode or (1 if problems else 0)


if __name__ == "__main__":
    sys.exit(main())
