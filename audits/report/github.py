"""`--format github`: workflow commands that GitHub Actions turns into file annotations."""

from __future__ import annotations

from audits.engine import AuditReport
from audits.report.neutral import github as _escape

_LEVEL = {"FAIL": "error", "WARN": "warning", "INFO": "notice"}


def render_github(report: AuditReport) -> str:
    out = []
    for r in report.submissions:
        base = r.submission.repo_rel or str(r.submission.root)
        for f in r.findings:
            if f.waived:
                continue
            props = [f"title={_escape('pgolf ' + f.rule, True)}"]
            if f.file:
                path = base.rstrip("/") + "/" + f.file if f.file != "." else base
                props.insert(0, f"file={_escape(path, True)}")
                if f.line:
                    props.insert(1, f"line={f.line}")
            message = f.message + (f" (fix: {f.hint})" if f.hint and str(f.severity) != "INFO" else "")
            out.append(f"::{_LEVEL[str(f.severity)]} {','.join(props)}::{_escape(message)}")
        for error in r.errors:
            out.append(f"::error title=pgolf internal error::{_escape(error)}")
        out.append(f"::notice title=pgolf verdict::{_escape(r.submission.name)}: "
                   f"{r.verdict(report.options.strict)}")
    return "\n".join(out) + "\n"
