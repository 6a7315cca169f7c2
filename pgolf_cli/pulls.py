"""A clone of the challenge repository, read with plain git: its PRs, its main branch, its records.

GitHub publishes each PR's head commit as `refs/pull/N/head` in the base repository, so no API
(and no token) is needed: `git fetch origin '+refs/pull/*/head:refs/pull/*/head'` copies all of
them into a clone, and one PR is fetched on demand when its ref is missing. Whether a PR was
merged is read from the main branch: its head is an ancestor of main, or a commit on main's
first-parent line names it ("Merge pull request #N ...", "Merge PR #N: ...", "... (#N)"). Plain
git cannot tell an open PR from one closed without merging; both are "unmerged".
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

from audits.submission import TRACKS, InputError
from audits.submission.gitdiff import GIT_TIMEOUT, git

BASES = ("refs/remotes/upstream/main", "refs/remotes/origin/main", "refs/heads/main")
REMOTES = ("upstream", "origin")  # in a fork's clone, upstream is the challenge repository
FETCH_TIMEOUT = 300
_PR_REF = re.compile(r"refs/pull/(\d+)/head")
_MERGE_SUBJECT = re.compile(r"^Merge (?:pull request|PR) #(\d+)\b:?\s*(.*)$")
# the title ends on a non-space: a lazy title before optional spaces is quadratic in a run of them
_SQUASH_SUBJECT = re.compile(r"^((?:.*?\S)??)\s*\(#(\d+)\)\s*$")


@dataclasses.dataclass(frozen=True)
class Landed:
    """A commit on main's first-parent line that brought a PR in."""

    number: int | None
    title: str
    commit: str


def resolve_base(repo: Path, base: str | None) -> str:
    """The commit PRs are compared with: `base` as given, else the clone's main branch."""
    if base is not None:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}").decode().strip()
    for ref in BASES:
        commit = _ref_commit(repo, ref)
        if commit:
            return commit
    raise InputError(f"{repo}: no main branch ({', '.join(BASES)}); give the base with --base REF")


def pr_base(repo: Path, head: str, base: str | None) -> str:
    """The commit a PR's change is read against: `base` (default main); for a PR already merged
    into it, the base it was merged into (the first parent of the first commit on its first-parent
    line that contains the PR), since against the base of today its change is empty."""
    main = resolve_base(repo, base)
    if head == main or not _is_ancestor(repo, head, main):
        return main
    after = set(git(repo, "rev-list", "--ancestry-path", f"{head}..{main}").decode().split())
    line = git(repo, "rev-list", "--first-parent", main).decode().split()  # newest first
    landing = next(c for c in reversed(line) if c in after)
    before = git(repo, "rev-parse", f"{landing}^1").decode().strip()
    if before == head:
        raise InputError(f"{head[:12]} was fast-forwarded into {base or 'main'}, which does not say "
                         "where the PR began; give --base the commit before it")
    return before


def pr_head(repo: Path, number: int) -> str:
    """The head commit of PR `number`: refs/pull/N/head, fetched from the remote when missing."""
    ref = f"refs/pull/{number}/head"
    commit = _ref_commit(repo, ref)
    if commit:
        return commit
    remote = next((r for r in REMOTES if r in git(repo, "remote").decode().split()), None)
    if remote is None:
        raise InputError(f"PR #{number}: {ref} is not in {repo}, which has no remote to fetch it from")
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")  # fail rather than ask for a password
    try:
        done = subprocess.run(["git", "-C", str(repo), "fetch", "--quiet", "--no-tags", remote,
                               f"+{ref}:{ref}"], capture_output=True, env=env, timeout=FETCH_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise InputError(f"PR #{number}: `git fetch {remote} {ref}` took over {FETCH_TIMEOUT} s") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"PR #{number}: {ref} is not in {repo} and `git fetch {remote} {ref}` failed: "
                         f"{lines[-1] if lines else 'exit ' + str(done.returncode)}")
    return _ref_commit(repo, ref) or ""


def pr_heads(repo: Path) -> dict[int, str]:
    """Every PR head the clone holds: number -> commit."""
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/pull/")
    heads = {}
    for line in out.decode("utf-8", "replace").splitlines():
        ref, _, commit = line.partition(" ")
        m = _PR_REF.fullmatch(ref)
        if m:
            heads[int(m.group(1))] = commit
    return heads


def merged(repo: Path, base: str) -> dict[int, str]:
    """PRs merged into `base`: number -> its title where main's history gives one, else ""."""
    out = git(repo, "for-each-ref", f"--merged={base}", "--format=%(refname)", "refs/pull/")
    done = {int(m.group(1)): "" for m in map(_PR_REF.fullmatch, out.decode().split()) if m}
    for landed in _first_parent_log(repo, base):
        if landed.number is not None:
            done[landed.number] = landed.title
    return done


def record_folders(repo: Path, base: str) -> dict[str, Landed | None]:
    """Every records folder at `base`, each with the commit on main that first added files to it
    (None when that line of history does not add it)."""
    folders = {}
    for track in TRACKS:
        try:
            out = git(repo, "ls-tree", "-d", "-z", "--name-only", f"{base}:records/{track}")
        except InputError:
            continue  # no such track at this commit
        for name in out.decode("utf-8", "surrogateescape").split("\0"):
            if name:
                folders[f"records/{track}/{name}"] = None
    for landed, paths in reversed(_first_parent_log(repo, base, with_added=True)):
        for path in paths:
            folder = "/".join(path.split("/")[:3])
            if folder in folders and folders[folder] is None:
                folders[folder] = landed
    return folders


def _first_parent_log(repo: Path, base: str, with_added: bool = False) -> list:
    """Main's first-parent commits, newest first, as Landed (and with `with_added` the records
    paths each adds relative to its first parent)."""
    args = ["log", "--first-parent", "-z", "--format=%x01%H%x00%s%x00%b%x00"]
    if with_added:
        args += ["-m", "--diff-filter=A", "--name-only", "--no-renames", base, "--", "records/"]
    else:
        args += [base]
    out = git(repo, *args).decode("utf-8", "surrogateescape")
    commits = []
    for chunk in out.split("\x01")[1:]:
        fields = chunk.split("\0")
        commit, subject, body = fields[0], fields[1], fields[2]
        landed = _landed(commit, subject, body)
        if with_added:
            commits.append((landed, [f.strip("\n") for f in fields[3:] if f.strip("\n")]))
        else:
            commits.append(landed)
    return commits


def _landed(commit: str, subject: str, body: str) -> Landed:
    m = _MERGE_SUBJECT.match(subject)
    if m:  # GitHub's merge commit: the PR's title is the body's first line
        title = m.group(2) if subject.startswith("Merge PR") else next(
            (line.strip() for line in body.splitlines() if line.strip()), "")
        return Landed(int(m.group(1)), title, commit)
    m = _SQUASH_SUBJECT.match(subject)
    if m:  # a squash merge: "TITLE (#N)"
        return Landed(int(m.group(2)), m.group(1), commit)
    return Landed(None, subject, commit)


def _is_ancestor(repo: Path, commit: str, of: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", commit, of],
                          capture_output=True, timeout=GIT_TIMEOUT).returncode == 0


def _ref_commit(repo: Path, ref: str) -> str | None:
    out = git(repo, "for-each-ref", "--format=%(objectname)", ref).decode().split()
    return out[0] if out else None
