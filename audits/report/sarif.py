"""`--format sarif`: SARIF 2.1.0, the static-analysis format that code scanning and editors read.

One run for the whole audit. `tool.driver.rules` is the catalogue (summary, the `--explain` text
as help, the first source as helpUri); each finding is a result pointing at its rule by id and
index. A file is named relative to the repository root where that is known (with --base, or a
folder inside a git checkout), else by its absolute file URI. Lines count in the shipped file:
a finding in a wrapper's unwrapped source gets no region and says so in its message. A waived
finding is a suppressed result with the reason as its justification.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from audits import __version__, catalogue
from audits.engine import AuditReport, SubmissionReport
from audits.findings import Finding
from audits.registry import CHECKS, REPO
from audits.report import neutral
from audits.report.paths import repo_file
from audits.report.rules import explain

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"FAIL": "error", "WARN": "warning", "INFO": "note"}
_SRCROOT = "SRCROOT"


def _repository_root(folder: Path) -> Path | None:
    """The git checkout that holds `folder`, found by its `.git` entry (no git call)."""
    for parent in (folder, *folder.parents):
        if (parent / ".git").exists():
            return parent
    return None


def _artifact(r: SubmissionReport, f: Finding) -> dict | None:
    sub = r.submission
    path = repo_file(sub, f)
    if path is None:
        return None
    if sub.repo_rel is not None:
        return {"uri": quote(path), "uriBaseId": _SRCROOT}
    root = _repository_root(sub.root)
    full = sub.root if f.file == "." else sub.root / f.file
    if root is not None:
        return {"uri": quote(full.relative_to(root).as_posix()), "uriBaseId": _SRCROOT}
    return {"uri": full.as_uri()}


def _rule(rule: catalogue.Rule) -> dict:
    checked = rule.id in CHECKS
    return {
        "id": rule.id,
        "name": "".join(part.capitalize() for part in rule.id.split("_")),  # TrainOverBudget
        "shortDescription": {"text": rule.summary},
        "help": {"text": explain(rule.id)},
        "helpUri": rule.sources[0].url if rule.sources else REPO,
        "defaultConfiguration": {"level": _LEVEL[str(rule.severity)], "enabled": checked},
        "properties": {"family": rule.family, "verdict": rule.level,
                       "conditions": list(rule.conditions)},
    }


def _result(r: SubmissionReport, f: Finding, index: dict[str, int]) -> dict:
    text = f.message
    if f.via:
        text += f" ({f.via})"
    if f.hint and str(f.severity) != "INFO":
        text += f" Fix: {f.hint}"
    result = {"ruleId": f.rule, "ruleIndex": index[f.rule], "level": _LEVEL[str(f.severity)],
              "message": {"text": neutral.terminal(text)}}
    artifact = _artifact(r, f)
    if artifact is not None:
        location = {"artifactLocation": artifact}
        if f.line and f.via is None:
            region = {"startLine": f.line}
            if f.column is not None:
                region["startColumn"] = f.column + 1  # SARIF counts columns from 1
            location["region"] = region
        result["locations"] = [{"physicalLocation": location}]
    if f.waived is not None:
        result["suppressions"] = [{"kind": "external", "status": "accepted",
                                   "justification": neutral.terminal(f.waived)}]
    properties = {"submission": neutral.terminal(r.submission.name)}
    if f.evidence:
        properties["evidence"] = neutral.terminal(f.evidence)
    result["properties"] = properties
    return result


def render_sarif(report: AuditReport) -> str:
    strict = report.options.strict
    index = {rule.id: i for i, rule in enumerate(catalogue.RULES)}
    results = [_result(r, f, index) for r in report.submissions for f in r.findings]
    notifications = [{"level": "error", "message": {"text": neutral.terminal(error)}}
                     for r in report.submissions for error in r.errors]
    run = {
        "tool": {"driver": {"name": "pgolf", "version": __version__,
                            "informationUri": REPO,
                            "rules": [_rule(rule) for rule in catalogue.RULES]}},
        "invocations": [{"executionSuccessful": not notifications,
                         "toolExecutionNotifications": notifications}],
        "results": results,
        "properties": {
            "targetPython": report.options.python_label,
            "verdicts": [{"submission": neutral.terminal(r.submission.name),
                          "verdict": r.verdict(strict)} for r in report.submissions],
        },
    }
    doc = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return neutral.json_text(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"
