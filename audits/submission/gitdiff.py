"""The change a PR makes: paths added, modified or deleted between a base ref and HEAD."""

from __future__ import annotations

import subprocess
from pathlib import Path

from audits.submission import InputError

GIT_TIMEOUT = 30


def git(repo: Path, *args: str) -> bytes:
    """The output of `git -C repo ARGS`; a clear InputError when git is missing, slow or fails."""
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                              timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError as exc:
        raise InputError("git is not installed; reading a change from a repository needs it") from exc
    except subprocess.TimeoutExpired as exc:
        raise InputError(f"git {args[0]} took over {GIT_TIMEOUT} s in {repo}") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"git {' '.join(args[:2])} failed in {repo}: "
                         f"{message[-1] if message else 'exit ' + str(done.returncode)}")
    return done.stdout


def changed_paths(repo: Path, base: str, head: str = "HEAD") -> list[tuple[str, str]]:
    """(status letter, path) for every path `head` changes relative to its merge base with `base`."""
    if not (repo / ".git").exists():
        git(repo, "rev-parse", "--git-dir")  # raises a clear error when not a repository
    git(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    out = git(repo, "diff", "--name-status", "--no-renames", "-z", f"{base}...{head}")
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    changes = []
    for status, path in zip(fields[0::2], fields[1::2]):
        if status:
            changes.append((status[0], path))
    return changes


def added_folders(changes: list[tuple[str, str]]) -> list[str]:
    """Records folders (`records/track_*/NAME`) in which the change adds files, in order."""
    folders = []
    for status, path in changes:
        if status != "A":
            continue
        parts = path.split("/")
        if len(parts) >= 4 and parts[0] == "records" and parts[1].startswith("track_"):
            folder = "/".join(parts[:3])
            if folder not in folders:
                folders.append(folder)
    return folders
