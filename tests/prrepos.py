"""Small challenge repositories in real git: a main branch with records, and PRs published as
refs/pull/N/head the way GitHub publishes them, some merged into main."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support import good_folder_files, record_log, write_folder

OLD = "records/track_10min_16mb/2026-03-17_Old"
_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2026-04-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-04-01T00:00:00Z"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=_ENV)
    return done.stdout.decode().strip()


def challenge_repo(root: Path) -> Path:
    """The base repository: a README and one merged records folder on main."""
    write_folder(root, {"README.md": "# challenge\n"})
    write_folder(root / OLD, good_folder_files())
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def add_pr(repo: Path, number: int, files: dict[str, str | bytes], *, delete: tuple[str, ...] = (),
           merge_title: str | None = None) -> str:
    """Commit `files` (repository path -> content) and `delete` on a branch from main, publish it
    as refs/pull/N/head, and with `merge_title` merge it into main as GitHub does. Its head."""
    git(repo, "checkout", "-qb", f"pr{number}", "main")
    write_folder(repo, files)
    for path in delete:
        (repo / path).unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"submission {number}")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "update-ref", f"refs/pull/{number}/head", head)
    git(repo, "checkout", "-q", "main")
    if merge_title is not None:
        git(repo, "merge", "-q", "--no-ff", f"pr{number}", "-m",
            f"Merge pull request #{number} from someone/pr{number}", "-m", merge_title)
    git(repo, "branch", "-qD", f"pr{number}")
    return head


def folder_files(folder: str, **log) -> dict[str, str]:
    """A good records folder at repository path `folder`; `log` changes its logs' figures."""
    files = good_folder_files()
    for name in list(files):
        if name.endswith(".log") and log:
            files[name] = record_log(int(name[len("train_seed"):-len(".log")]), **log)
    return {f"{folder}/{name}": text for name, text in files.items()}


def clone(upstream: Path, dest: Path, *, with_prs: bool = True) -> Path:
    """A clone of `upstream`, with every PR ref fetched (as a reviewer's clone would have them)."""
    subprocess.run(["git", "clone", "-q", str(upstream), str(dest)], check=True, capture_output=True)
    if with_prs:
        git(dest, "fetch", "-q", "origin", "+refs/pull/*/head:refs/pull/*/head")
    return dest
