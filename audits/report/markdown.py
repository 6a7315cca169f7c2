"""`--format markdown`: the report as a review a person can read or paste into a PR."""

from __future__ import annotations

from audits import __version__, catalogue
from audits.engine import AuditReport
from audits.report.text import seed_table


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def render_markdown(report: AuditReport) -> str:
    o = report.options
    out = []
    for r in report.submissions:
        sub = r.submission
        verdict = r.verdict(o.strict)
        out.append(f"## pgolf audit: {verdict} - {sub.name}")
        out.append("")
        out.append(f"Track: {sub.track} ({sub.track_origin}). Target Python: {o.python_label}.")
        rows = seed_table(sub)
        if len(rows) > 1:
            out.append("")
            out.append("| " + " | ".join(rows[0]) + " |")
            out.append("|" + "---|" * len(rows[0]))
            for row in rows[1:]:
                out.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        problems = [f for f in r.findings if f.severity > 0 and not f.waived]
        if problems:
            out.append("")
            out.append("### Findings")
        for f in problems:
            rule = catalogue.get(f.rule)
            out.append("")
            out.append(f"#### {f.severity} `{f.rule}`: {f.message}")
            if f.location():
                out.append(f"At `{f.location()}`" + (f" ({f.via})" if f.via else "") + ".")
            if f.evidence:
                out.append(_fence(f.evidence))
            if f.hint:
                out.append(f"Fix: {f.hint}")
            cond = f" ({', '.join(rule.conditions)})" if rule.conditions else ""
            out.append(f"Rule: {rule.summary}{cond} Source: {f.source}.")
        infos = [f for f in r.findings if f.severity == 0]
        if infos:
            out.append("")
            out.append("### Checked, and noted")
            for f in infos:
                where = f" (`{f.location()}`)" if f.location() else ""
                out.append(f"- `{f.rule}`{where}: {f.message}")
        waived = [f for f in r.findings if f.waived]
        if waived:
            out.append("")
            out.append("### Waived")
            for f in waived:
                out.append(f"- `{f.rule}`: {f.message} (waived: {f.waived})")
        for error in r.errors:
            out.append(f"\n**pgolf internal error:** {error}")
        out.append("")
    out.append(f"<sub>pgolf {__version__}, Python target {o.python_label}.</sub>")
    return "\n".join(out) + "\n"
