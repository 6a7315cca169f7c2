"""Snapshot the audit's JSON on many folders, and compare two snapshots byte for byte.

A refactor of audits/ must not change a verdict: take a snapshot before, one after, compare.

    python scripts/audit_snapshot.py write BEFORE [--corpus CORPUS_DIR]
    python scripts/audit_snapshot.py write AFTER  [--corpus CORPUS_DIR]
    python scripts/audit_snapshot.py compare BEFORE AFTER

The folders: every submission folder under tests/fixtures (the smoke fixtures audited with
--no-smoke, so no timing enters), each legality fixture laid out as a submission, and each case
of a built corpus (`<CORPUS_DIR>/<id>/folder`, see the labelled corpus' build script). The CLI
runs in a subprocess per folder, so the snapshot reads the same bytes a user would.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# Legality fixtures laid out as folders at a fixed place, so absolute paths in the JSON agree.
CASES = Path(tempfile.gettempdir()) / "pgolf-snapshot-cases"


def _submission_folders() -> list[tuple[str, Path]]:
    found = []
    for sub in ("records", "smoke"):
        for path in sorted((FIXTURES / sub).rglob("*")):
            if path.is_dir() and any(p.is_file() for p in path.iterdir()) and path.name != "logs":
                found.append((f"{sub}/{path.relative_to(FIXTURES / sub)}", path))
    return found


def _legality_folders() -> list[tuple[str, Path]]:
    if CASES.exists():
        shutil.rmtree(CASES)
    found = []
    for sub in ("legality", "legality_heldout"):  # each grouped in folders by rule
        for path in sorted(p for rule in (FIXTURES / sub).iterdir() if rule.is_dir() for p in rule.iterdir()):
            folder = CASES / sub / path.stem
            if path.is_dir():
                shutil.copytree(path, folder)
            elif path.suffix == ".py":
                folder.mkdir(parents=True)
                shutil.copy(path, folder / "train_gpt.py")
            else:
                continue
            found.append((f"{sub}/{path.stem}", folder))
    return found


def _corpus_folders(corpus: Path) -> list[tuple[str, Path]]:
    return [(f"corpus/{d.name}", d / "folder") for d in sorted(corpus.iterdir()) if (d / "folder").is_dir()]


def _audit(folder: Path) -> bytes:
    proc = subprocess.run(
        [sys.executable, "-m", "pgolf_cli", "audit", "--format", "json", "--no-smoke", str(folder)],
        capture_output=True, cwd=ROOT, timeout=600,
    )
    return proc.stdout + f"\n--- exit {proc.returncode}\n".encode() + proc.stderr


def write(out: Path, corpus: Path | None, jobs: int) -> None:
    targets = _submission_folders() + _legality_folders()
    if corpus is not None:
        targets += _corpus_folders(corpus)
    out.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for (name, _), data in zip(targets, pool.map(lambda t: _audit(t[1]), targets)):
            dest = out / (name.replace("/", "__") + ".json")
            dest.write_bytes(data)
    listing = subprocess.run([sys.executable, "-m", "pgolf_cli", "audit", "--list-rules"],
                             capture_output=True, cwd=ROOT)
    (out / "_list_rules.txt").write_bytes(listing.stdout)
    print(f"{len(targets)} folders audited into {out}")


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.iterdir()} | {p.name for p in after.iterdir()})
    differ = [n for n in names if not (before / n).exists() or not (after / n).exists()
              or (before / n).read_bytes() != (after / n).read_bytes()]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(names) - len(differ)} of {len(names)} snapshots identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="audit every folder into OUT")
    w.add_argument("out", type=Path)
    w.add_argument("--corpus", type=Path, help="a built corpus: <CORPUS>/<id>/folder")
    w.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    c = sub.add_parser("compare", help="compare two snapshots; exit 1 if any differs")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "write":
        write(args.out, args.corpus, args.jobs)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
