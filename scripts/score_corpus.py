"""Audit a labelled corpus of real submissions and print its score table.

    python scripts/score_corpus.py --corpus CORPUS_DIR --scorer SCORE_PY [--alias ALIASES_JSON]
    python scripts/score_corpus.py --build BUILD_PY --git GIT_DIR --corpus CORPUS_DIR --scorer SCORE_PY

With --build, the corpus is built first (`BUILD_PY GIT_DIR --out CORPUS_DIR`, from a git dir of
openai/parameter-golf that holds the PR heads). Every case `<CORPUS_DIR>/<id>/folder` is then
audited with `pgolf audit --format json --no-smoke` in a process of its own (--jobs at a time,
each bounded by --timeout), with the PR's changed paths from `<id>/CASE.json` (`--changed-files`),
the JSON written to `--out/<id>.json`, and the scorer run on that directory. The wall time of the
audits is printed last.

The audit's modules are imported once, here, and each case's process is forked from this one:
it starts with them loaded (about a second of CPU saved per case) yet shares nothing with the
other cases, so a crash, a hang (killed at --timeout) or a leak stays in its own case. The
largest folders start first, so that the last one to finish is a small one.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.connection
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The audit's modules (libcst and every rule) load where the command runs, not with it: loaded
# here once, every forked case starts with them.
import audits.api  # noqa: F401
import audits.catalogue  # noqa: F401
import audits.report  # noqa: F401
import audits.waivers  # noqa: F401
import pgolf_cli.audit_cmd  # noqa: F401
import pgolf_cli.config  # noqa: F401
from pgolf_cli import main as cli

_FORK = multiprocessing.get_context("fork")


def _arguments(folder: Path, out: Path) -> list[str]:
    """`pgolf audit`'s arguments for one case: with the PR's changed paths where CASE.json has them
    (the folder's files at its place, and the rest), written beside the case's JSON."""
    arguments = ["audit", "--format", "json", "--no-smoke"]
    case = folder.parent / "CASE.json"
    meta = json.loads(case.read_text()) if case.is_file() else {}
    if meta.get("pr_files_in_folder"):
        lines = [f"{f['status']}\t{meta['folder']}/{f['path']}" for f in meta["pr_files_in_folder"]]
        lines += [f"{f['status']}\t{f['path']}" for f in meta.get("pr_files_outside_folder", [])]
        changes = out.with_suffix(".changes")
        changes.write_text("".join(line + "\n" for line in lines))
        arguments += ["--changed-files", str(changes)]
    return arguments + [str(folder)]


def _run_case(folder: Path, out: Path, err: Path, arguments=_arguments) -> None:
    """The child: `pgolf audit --format json --no-smoke [--changed-files F] FOLDER` (or what
    `arguments` gives), stdout into `out`."""
    arguments = arguments(folder, out)
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        os.dup2(stdout.fileno(), 1)
        os.dup2(stderr.fileno(), 2)
    sys.argv = ["pgolf", *arguments]
    cli.main()  # exits with the audit's status; multiprocessing makes it the exit code


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def audit_all(cases: list[Path], out: Path, jobs: int, timeout: float, arguments=_arguments) -> list[str]:
    """Audit every case into `out/<id>.json`, `jobs` at a time, with the command line
    `arguments(folder, json_path)` gives; returns a line per case that failed (timed out, crashed,
    or exited with a status other than 0 or 1)."""
    problems = []
    todo = sorted(cases, key=_size, reverse=True)
    running: dict[int, tuple[multiprocessing.Process, Path, float]] = {}
    with tempfile.TemporaryDirectory() as errors:
        while todo or running:
            while todo and len(running) < jobs:
                folder = todo.pop(0)
                err = Path(errors) / f"{folder.parent.name}.err"
                child = _FORK.Process(target=_run_case,
                                      args=(folder, out / f"{folder.parent.name}.json", err, arguments))
                child.start()
                running[child.sentinel] = (child, err, time.monotonic() + timeout)
            first_deadline = min(deadline for _, _, deadline in running.values())
            multiprocessing.connection.wait(list(running), max(0.0, first_deadline - time.monotonic()))
            for sentinel, (child, err, deadline) in list(running.items()):
                name = err.stem
                if child.exitcode is None and time.monotonic() < deadline:
                    continue
                del running[sentinel]
                if child.exitcode is None:
                    child.kill()
                    child.join()
                    problems.append(f"{name}: timed out after {timeout:g} s")
                elif child.exitcode not in (0, 1):
                    text = err.read_text(errors="replace").strip().splitlines()
                    problems.append(f"{name}: exit {child.exitcode}: {(text or ['no output'])[-1]}")
                child.close()
    return sorted(problems)


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
    problems = audit_all(cases, args.out, args.jobs, args.timeout)
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
