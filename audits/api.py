"""Audit from Python: the same entry point the CLI uses."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from audits import submission as submission_mod
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
            sub = submission_mod.load(path, changes=changes)
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
        folders = [f for f in added_folders(changes) if (repo / f).is_dir()]
        if not folders:
            subs.append(submission_mod.Submission(root=repo.resolve(), name=repo.resolve().name,
                                                  track="10min_16mb", track_origin="no records folder",
                                                  changes=changes))
        for folder in folders:
            subs.append(submission_mod.load(repo / folder, changes=changes, repo_rel=folder))
    return subs


def audit(paths: Iterable[str], options: AuditOptions) -> AuditReport:
    reports = []
    for sub in load_submissions(paths, options):
        if sub.changes is not None and not sub.entries and sub.track_origin == "no records folder":
            findings = list(layout_not_single_folder(sub, options))
            reports.append(SubmissionReport(sub, findings, []))
        else:
            reports.append(audit_submission(sub, options))
    return AuditReport(options, reports)
