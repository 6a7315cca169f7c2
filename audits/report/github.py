"""`--format github`: workflow commands that GitHub Actions turns into file annotations."""

from __future__ import annotations

from audits.engine import AuditReport
from audits.report.neutral import github as _escape
from audits.report.paths import repo_file

_LEVEL = {"FAIL": "error", "WARN": "warning", "INFO": "notice"}


def render_github(report: AuditReport) -> str:
    out = []
    for r in report.submissions:
        sub = r.submission
        weaker = f" ({r.weaker_sandbox()})" if r.weaker_sandbox() else ""
        out.append(f"::notice title=pgolf verdict::{_escape(sub.name)}: "
                   f"{r.verdict(report.options.strict)}{_escape(weaker)}")
        for f in r.findings:  # the deciding finding first
            title = "pgolf " + f.rule + (" (waived)" if f.waived else "")
            props = [f"title={_escape(title, True)}"]
            message = f.message + (f" (waived: {f.waived})" if f.waived else "")
            path = repo_file(sub, f)
            if path is not None:
                if sub.repo_rel is None:  # no --base: the folder's path as given
                    path = str(sub.root) if f.file == "." else f"{sub.root}/{f.file}"
                props.insert(0, f"file={_escape(path, True)}")
                if f.line and f.via is None:
                    props.insert(1, f"line={f.line}")
                elif f.line:  # the line is in the unwrapped source, not in the shipped file
                    message += f" ({f.via})"
            message += f" (fix: {f.hint})" if f.hint and str(f.severity) != "INFO" and not f.waived else ""
            level = "notice" if f.waived else _LEVEL[str(f.severity)]  # shown, and blocking nothing
            out.append(f"::{level} {','.join(props)}::{_escape(message)}")
        for error in r.errors:
            out.append(f"::error title=pgolf internal error::{_escape(error)}")
    return "\n".join(out) + "\n"
