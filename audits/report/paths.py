"""Where a finding points, as a reviewer finds it: with --base, relative to the repository."""

from __future__ import annotations

from audits.findings import Finding
from audits.submission import Submission

REPO_PATH_RULES = {"LAYOUT_NOT_SINGLE_FOLDER"}  # their findings name paths in the repository


def repo_file(sub: Submission, f: Finding) -> str | None:
    """The finding's file relative to the repository when the folder's place is known, else to
    the folder; a path the finding already gives in the repository is kept."""
    if not f.file:
        return None
    if not sub.repo_rel or f.rule in REPO_PATH_RULES:
        return f.file
    return sub.repo_rel if f.file == "." else f"{sub.repo_rel}/{f.file}"


def repo_location(sub: Submission, f: Finding) -> str:
    """`file:line:col` with the file as `repo_file` gives it."""
    location = f.location()
    path = repo_file(sub, f)
    return location if path is None else path + location[len(f.file):]
