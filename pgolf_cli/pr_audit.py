"""A PR of a clone audited as `pgolf audit CHECKOUT --base BASE` audits a checkout of it.

The change is read between the PR's head and its merge base with the base branch; the folders
it adds are written from the head commit into a temporary folder, at their repository paths, and
audited with the whole change (the one-folder rule). The clone's work tree is never touched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from audits import api, timelimit
from audits.context import AuditOptions
from audits.engine import AuditReport
from audits.smoke import tempdirs
from audits.submission import Problem, Submission, display_name
from audits.submission.gitdiff import added_folders, changed_paths
from pgolf_cli import gittree, pulls

PREFIX = "pgolf-pr-"  # the temporary folder a PR's folders are written into


@contextlib.contextmanager
def pr_report(repo: Path, number: int, base: str | None, options: AuditOptions,
              time_limit: float | None = None) -> Iterator[AuditReport]:
    """The audit of PR `number` (its head fetched when the clone lacks it), its reading and checks
    within `time_limit` seconds; its folders stay on disk until the block ends, for renderers that
    read them again."""
    head = pulls.pr_head(repo, number)
    base_commit = pulls.pr_base(repo, head, base)
    with tempdirs.locked(PREFIX) as tmp:
        tree = tmp / f"pr-{number}"
        with timelimit.limit(time_limit):
            try:
                subs = change_at(repo, base_commit, head, tree)
            except timelimit.Reached:
                subs = [api.cut_short(tree, None)]
            report = api.audit_loaded(subs, options)
        yield report


def change_at(repo: Path, base: str, head: str, tree: Path,
              changes: list[tuple[str, str]] | None = None) -> list[Submission]:
    """The submissions of the change from `base` to `head` (`changes`, when already read), their
    folders written under `tree`."""
    if changes is None:
        changes = changed_paths(repo, base, head)
    tree.mkdir(parents=True, exist_ok=True)
    missing = {folder: gittree.extract(repo, head, folder, tree / folder) for folder in added_folders(changes)}
    subs = api.change_submissions(tree, changes)
    for sub in subs:
        note_missing(sub, missing.get(sub.repo_rel, []))
    return subs


def note_missing(sub: Submission, missing: list[str]) -> None:
    """Files of the folder whose content the clone lacks are reported, not silently left out."""
    for rel in missing:
        sub.problems.append(Problem("FILE_UNREADABLE", f"{display_name(rel)} is in the commit but its "
                                    "content is not in this clone (a partial clone?); it was not read",
                                    None, {"file": display_name(rel)}))
