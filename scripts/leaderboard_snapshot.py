"""Write audits/leaderboard.py: the record track's leaderboard as the challenge's README lists it at
one commit, the default baseline of the significance test.

    python scripts/leaderboard_snapshot.py GIT_DIR REF > audits/leaderboard.py

GIT_DIR is a git dir of openai/parameter-golf; REF the commit (or branch) whose README.md is read.
"""

from __future__ import annotations

import re
import subprocess
import sys

_ROW = re.compile(r"^\|(?P<run>[^|]+)\|\s*(?P<score>\d+\.\d+)\s*\|[^|]*\|.*\|"
                  r"\s*(?P<date>\d{4}-\d{2}-\d{2})\s*\|(?P<info>[^|]*)\|\s*$")
_FOLDER = re.compile(r"records/track_10min_16mb/([^/)]+)/")


def rows(readme: str) -> list[tuple]:
    """(date, score, decimals, name, folder) of each row of the first leaderboard table."""
    section = readme.split("## Leaderboard", 1)[1].split("\n####", 1)[0]
    out = []
    for line in section.splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        info = m.group("info")
        folder = _FOLDER.search(info)
        out.append((m.group("date"), float(m.group("score")), len(m.group("score").split(".")[1]),
                    m.group("run").strip(), folder.group(1) if folder else None))
    return out


def main() -> None:
    git_dir, ref = sys.argv[1:3]
    commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", ref], check=True,
                            capture_output=True, text=True).stdout.strip()
    readme = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:README.md"], check=True,
                            capture_output=True, text=True).stdout
    print('"""The record track\'s leaderboard as the challenge\'s README lists it at one commit: the')
    print("records the significance test measures a submission against by default. Written by")
    print('scripts/leaderboard_snapshot.py; do not edit by hand."""')
    print()
    print(f'COMMIT = "{commit}"')
    print("# (date, val_bpb, printed decimals, run name, records folder when merged, else None)")
    print("ROWS = (")
    for row in rows(readme):
        print(f"    {row!r},")
    print(")")


if __name__ == "__main__":
    main()
