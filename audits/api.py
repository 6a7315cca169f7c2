"""Audit from Python: the same entry point the CLI uses."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from audits import submission as submission_mod
from audits import timelimit
from audits.context import AuditOptions
from audits.engine import AuditReport, SubmissionReport, audit_submission
from audits.rules.layout import layout_not_single_folder
from audits.submission.gitdiff import added_folders, changed_paths, folder_in_change


def load_submissions(paths: Iterable[str], options: AuditOptions) -> list[submission_mod.Submission]:
    """The submissions named by `paths`: folders as given (with `changed_files`, each placed in the
    change), or with `base_ref` the records folders each repository's change adds. Raises
    InputError for paths that cannot be audited."""
    subs = []
    for path in paths:
        if options.base_ref is None:
            changes = None if options.changed_files is None else list(options.changed_files)
            try:
                sub = submission_mod.load(path, changes=changes)
            except timelimit.Reached:
                subs.append(cut_short(Path(path), changes))
                continue
            files = {e.rel for e in sub.entries if e.kind == "file"}
            folder = folder_in_change(changes, sub.name, files) if changes is not None else None
            if folder is not None:
                submission_mod.place(sub, folder)
            subs.append(sub)
            continue
        repo = Path(path)
        if not repo.is_dir():
            raise submission_mod.InputError(f"{path}: not a folder; with --base give a repository checkout")
        changes = changed_paths(repo, options.base_ref)
        try:
            subs.extend(change_submissions(repo, changes))
        except timelimit.Reached:
            subs.append(cut_short(repo, changes))
    return subs


def cut_short(root: Path, changes) -> submission_mod.Submission:
    """What stands for a folder whose reading the time limit stopped: its name and the finding."""
    sub = submission_mod.Submission(root=root.resolve(), name=root.resolve().name, track="10min_16mb",
                                    track_origin="not read", changes=changes)
    sub.problems.append(submission_mod.Problem(
        "AUDIT_TIME_LIMIT", timelimit.stopped("while reading the folder", []), None,
        {"hint": "Audit the folder again with a longer --time-limit, or read it by hand."}))
    return sub


def change_submissions(tree: Path, changes: list[tuple[str, str]]) -> list[submission_mod.Submission]:
    """The records folders a change adds, read from `tree` (a checkout of the change, or those
    folders alone laid out at their repository paths), each carrying the whole change for the
    one-folder rule; with no such folder, one empty submission that only that rule reads."""
    folders = [f for f in added_folders(changes) if (tree / f).is_dir()]
    if not folders:
        return [submission_mod.Submission(root=tree.resolve(), name=tree.resolve().name,
                                          track="10min_16mb", track_origin="no records folder",
                                          changes=changes)]
    return [submission_mod.load(tree / folder, changes=changes, repo_rel=folder) for folder in folders]


def audit(paths: Iterable[str], options: AuditOptions) -> AuditReport:
    return audit_loaded(load_submissions(paths, options), options)


def audit_loaded(subs: Iterable[submission_mod.Submission], options: AuditOptions) -> AuditReport:
    """The audit of submissions already read (by `load_submissions` or `change_submissions`)."""
    reports = []
    for sub in subs:
        if sub.changes is not None and not sub.entries and sub.track_origin == "no records folder":
            findings = list(layout_not_single_folder(sub, options))
            reports.append(SubmissionReport(sub, findings, []))
        else:
            try:
                reports.append(audit_submission(sub, options))
            except timelimit.Reached:  # between two checks: the checks' findings are lost
                reports.append(audit_submission(sub, options))
    return AuditReport(options, reports)
