"""A local git repository shaped like the challenge's: a base commit on `main`, then a branch
that adds one records folder (a PR as CI checks it out)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support import write_folder

TRACK = "records/track_10min_16mb"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**GIT_ENV, "HOME": str(repo)}, timeout=60)
    return done.stdout


def pr_repository(root: Path, name: str, files: dict[str, str | bytes]) -> Path:
    """`root` as a repository whose branch `submission` adds `records/track_10min_16mb/NAME`
    holding `files` over `main`; the branch is checked out."""
    (root / TRACK).mkdir(parents=True)
    (root / "README.md").write_text("# parameter-golf\n")
    (root / TRACK / ".keep").write_text("")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "submission")
    write_folder(root / TRACK / name, files)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", f"add {name}")
    return root
