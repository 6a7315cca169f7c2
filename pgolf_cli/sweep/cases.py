"""The cases of a sweep: what each one audits, the key its result is cached under, and the audit
itself, which runs in a worker process.

A PR case is the change from its base to its head, audited as `pgolf review --pr N` audits it; a
records case is one folder of main, audited as `pgolf audit FOLDER` audits it. The cache key is
a hash of everything the result depends on: pgolf's code, the audit's options, the git object
ids of the folders audited (a hash of their content) and, for a PR, its list of changed paths.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import platform
from pathlib import Path

import audits
import trainer
from audits import api, submission
from audits.context import AuditOptions
from audits.engine import SubmissionReport
from audits.report.paths import repo_location
from audits.report.review import render_review
from audits.smoke import tempdirs
from audits.submission.gitdiff import added_folders, changed_paths, git
from pgolf_cli import gittree, pr_audit, pulls
from trainer.files import write_atomic

PREFIX = "pgolf-sweep-"  # the temporary folder a case's folders are written into
MAX_LISTED = 50  # findings kept per row for the table's details


@dataclasses.dataclass(frozen=True)
class Case:
    id: str  # "#1234", or the folder's path for a records case
    pr: int | None
    title: str  # from main's history; "" when it gives none
    head: str  # the commit the folders are read from
    folder: str | None = None  # a records case: the folder's path at `head`


@dataclasses.dataclass(frozen=True)
class Settings:
    repo: Path
    options: AuditOptions
    cache: Path
    code: str  # code_hash()
    base: str | None  # --base as given: what PR cases are compared with (pulls.pr_base)


def code_hash() -> str:
    """A hash of pgolf's own source (the audit reads the challenge's limits and the code-size
    count from trainer/) and of what the smoke import runs under (Python, torch): results cached
    by another version are not reused."""
    digest = hashlib.sha256(f"{platform.python_version()} torch {_version('torch')}".encode())
    for package in (Path(audits.__file__).parent, Path(trainer.__file__).parent, Path(__file__).parents[1]):
        for path in sorted(package.rglob("*.py")):
            digest.update(path.relative_to(package.parent).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def audit_case(job: tuple[Case, Settings]) -> dict:
    """The worker's function: the case's rows and review, from the cache when its key is there."""
    case, s = job
    if case.folder is not None:
        base, changes, folders = None, None, [case.folder]
    else:
        base = pulls.pr_base(s.repo, case.head, s.base)
        changes = changed_paths(s.repo, base, case.head)
        folders = added_folders(changes)
    trees = [git(s.repo, "rev-parse", f"{case.head}:{folder}").decode().strip() for folder in folders]
    key = hashlib.sha256(json.dumps([s.code, _options_key(s.options), folders, trees, changes]).encode()).hexdigest()
    subject = git(s.repo, "log", "-1", "--format=%s", case.head).decode("utf-8", "replace").strip()
    entry = s.cache / key[:2] / f"{key}.json"
    try:
        result = json.loads(entry.read_text(encoding="utf-8"))
        result["cached"] = True
    except (OSError, ValueError):
        result = _audit(case, s, base, changes)
        write_atomic(entry, json.dumps(result))
        result["cached"] = False
    result["subject"] = subject
    return result


def _audit(case: Case, s: Settings, base: str | None, changes) -> dict:
    with tempdirs.locked(PREFIX) as tmp:
        tree = tmp / "tree"
        if case.folder is not None:
            missing = gittree.extract(s.repo, case.head, case.folder, tree / case.folder)
            subs = [submission.load(tree / case.folder, repo_rel=case.folder)]
            pr_audit.note_missing(subs[0], missing)
        else:
            subs = pr_audit.change_at(s.repo, base, case.head, tree, changes)
        report = api.audit_loaded(subs, s.options)
        return {"rows": [_row(r, s.options.strict) for r in report.submissions],
                "review": render_review(report)}


def _row(r: SubmissionReport, strict: bool) -> dict:
    sub = r.submission
    deciding = r.deciding(strict)
    counts = r.counts()
    return {
        "folder": sub.repo_rel,
        "name": _name(sub),
        "track": sub.track,
        "claimed_bpb": sub.claims.val_bpb if sub.claims is not None else None,
        "verdict": "ERROR" if r.errors else r.verdict(strict),
        "finding": f"{deciding.rule}: {deciding.message}" if deciding else "",
        "location": repo_location(sub, deciding) if deciding else "",
        "counts": {str(severity): n for severity, n in counts.items()},
        "findings": [{"rule": f.rule, "severity": str(f.severity), "message": f.message,
                      "location": repo_location(sub, f)}
                     for f in r.findings if f.waived is None][:MAX_LISTED],
        "errors": r.errors,
    }


def _name(sub: submission.Submission) -> str:
    """What the submission calls itself: submission.json's name, else the README's title."""
    data = sub.claims.data if sub.claims is not None else None
    if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"].strip():
        return data["name"].strip()
    return next((line[2:].strip() for line in (sub.readme or "").splitlines() if line.startswith("# ")), "")


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _options_key(options: AuditOptions) -> object:
    return json.loads(json.dumps(dataclasses.asdict(options), sort_keys=True, default=sorted))


def select(repo: Path, main: str, *, records: bool = False, prs: tuple[int, int] | None = None) -> list[Case]:
    """The cases of one selection: the records folders of `main`, the PRs numbered in `prs`, or
    else every PR not merged into `main`."""
    if records:
        return [Case(id=folder, pr=landed.number if landed else None, title=landed.title if landed else "",
                     head=main, folder=folder)
                for folder, landed in sorted(pulls.record_folders(repo, main).items())]
    heads = pulls.pr_heads(repo)
    titles = pulls.merged(repo, main)
    if prs is not None:
        numbers = [n for n in sorted(heads) if prs[0] <= n <= prs[1]]
    else:
        numbers = [n for n in sorted(heads) if n not in titles]
    return [Case(id=f"#{n}", pr=n, title=titles.get(n, ""), head=heads[n]) for n in numbers]
