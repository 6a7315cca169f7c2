"""The change a PR makes: paths added, modified or deleted, from git (a base ref and HEAD) or from
a list of changed paths (`--changed-files`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath

from audits.submission import InputError

GIT_TIMEOUT = 30
CHANGES_LIMIT = 4 * 1024 * 1024  # bytes of a changed-paths list; a PR lists far fewer
MAX_CHANGES = 100_000
# `git diff --name-status` lines: a status letter (R and C with a score and two paths), a tab, a path;
# spaces in place of the tab are accepted for hand-written lists.
_STATUS_LINE = re.compile(r"^([ACDMTUX])\s+(\S.*)$|^([RC])\d*\s+([^\t]+)\t(.+)$")


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
    """(status letter, path) for every path `head` changes relative to its merge base with `base`;
    where the two histories share no commit (a branch pushed from a fresh repository), relative
    to `base` itself."""
    if not (repo / ".git").exists():
        git(repo, "rev-parse", "--git-dir")  # raises a clear error when not a repository
    git(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    since = f"{base}...{head}" if _merge_base(repo, base, head) else f"{base}..{head}"
    out = git(repo, "diff", "--name-status", "--no-renames", "-z", since)
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    changes = []
    for status, path in zip(fields[0::2], fields[1::2]):
        if status:
            changes.append((status[0], path))
    return changes


def _merge_base(repo: Path, base: str, head: str) -> bool:
    """Do the histories of `base` and `head` share a commit? (`git merge-base` exits 1 if not.)"""
    try:
        git(repo, "merge-base", base, head)
    except InputError as exc:
        if "exit 1" in str(exc):
            return False
        raise
    return True


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


def parse_changes(text: str, origin: str) -> list[tuple[str, str]]:
    """(status letter, path) for each line of a changed-paths list: `git diff --name-status` output
    or bare paths (taken as added). A rename is a deletion plus an addition, as with --base.
    Raises InputError naming the first bad line."""
    changes = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _STATUS_LINE.match(line)
        if m and m.group(1):
            pairs = [(m.group(1), m.group(2))]
        elif m:
            pairs = ([("D", m.group(4))] if m.group(3) == "R" else []) + [("A", m.group(5))]
        else:
            pairs = [("A", line)]
        for status, path in pairs:
            problem = _bad_path(path.strip())
            if problem:
                raise InputError(f"{origin} line {number}: {problem}")
            changes.append((status, path.strip()))
        if len(changes) > MAX_CHANGES:
            raise InputError(f"{origin}: over {MAX_CHANGES:,} changed paths; give the PR's own change")
    return changes


def _bad_path(path: str) -> str | None:
    if re.search(r"[\x00-\x1f\x7f]", path):
        return "a path with a control character"
    pure = PurePosixPath(path)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", path):
        return f"{path!r} is absolute; give paths relative to the repository"
    if ".." in pure.parts:
        return f"{path!r} leaves the repository (..)"
    return None


def folder_in_change(changes: list[tuple[str, str]], name: str, files: set[str]) -> str | None:
    """The records folder of the change that is the audited folder: the one of the same name, else
    the one whose added files are all in the folder (a copy under another name); None when none
    or several fit."""
    folders = added_folders(changes)
    same_name = [f for f in folders if f.rsplit("/", 1)[-1] == name]
    if len(same_name) == 1:
        return same_name[0]
    fits = [f for f in folders
            if all(path[len(f) + 1:] in files for status, path in changes
                   if status == "A" and path.startswith(f + "/"))]
    return fits[0] if len(fits) == 1 else None
