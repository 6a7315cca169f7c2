"""`--format markdown`: the report as a review a person can read or paste into a PR.

A verdict line, one section per problem (with the place, the code it rests on, the fix and the
rule), then what was checked and found legal (INFO notes such as "legal score-first adaptation
at line 77") and which rules were checked with nothing to report. Deterministic: the order is the
engine's, rules without findings are listed in catalogue order.
"""

from __future__ import annotations

from audits import __version__, catalogue
from audits.engine import AuditReport
from audits.findings import Severity
from audits.report.neutral import cell, code, fence, markdown
from audits.report.text import quiet_rules, seed_table


def _verdict_line(r, strict: bool) -> str:
    active = [f for f in r.findings if f.waived is None]
    c = r.counts()
    fails, warns, notes = c[Severity.FAIL], c[Severity.WARN], c[Severity.INFO]
    parts = [f"{fails} failure{'s' if fails != 1 else ''}", f"{warns} warning{'s' if warns != 1 else ''}",
             f"{notes} note{'s' if notes != 1 else ''}"]
    rules = list(dict.fromkeys(f.rule for f in active if f.severity > Severity.INFO))  # deciding first
    failing = f" ({', '.join(f'`{rule}`' for rule in rules)})" if rules else ""
    sandbox = f" The smoke import ran in a weaker {r.weaker_sandbox()}." if r.weaker_sandbox() else ""
    return f"**Verdict: {r.verdict(strict)}** - {', '.join(parts)}{failing}.{sandbox}"


def render_markdown(report: AuditReport) -> str:
    o = report.options
    out = []
    for r in report.submissions:
        sub = r.submission
        out.append(f"## pgolf audit: {r.verdict(o.strict)} - {markdown(sub.name)}")
        out.append("")
        out.append(_verdict_line(r, o.strict))
        out.append("")
        out.append(f"Track: {sub.track} ({sub.track_origin}). Target Python: {o.python_label}.")
        rows = seed_table(sub)
        if len(rows) > 1:
            out.append("")
            out.append("| " + " | ".join(rows[0]) + " |")
            out.append("|" + "---|" * len(rows[0]))
            for row in rows[1:]:
                out.append("| " + " | ".join(cell(text) for text in row) + " |")
        problems = [f for f in r.findings if f.severity > 0 and not f.waived]
        if problems:
            out.append("")
            out.append("### Findings")
        for f in problems:
            rule = catalogue.get(f.rule)
            out.append("")
            out.append(f"#### {f.severity} `{f.rule}`: {markdown(f.message)}")
            if f.location():
                out.append(f"At {code(f.location())}" + (f" ({markdown(f.via)})" if f.via else "") + ".")
            if f.evidence:
                out.append(fence(f.evidence))
            if f.hint:
                out.append(f"Fix: {markdown(f.hint)}")
            cond = f" ({', '.join(rule.conditions)})" if rule.conditions else ""
            out.append(f"Rule: {rule.summary}{cond} Source: {f.source}.")
        infos = [f for f in r.findings if f.severity == 0]
        if infos:
            out.append("")
            out.append("### Checked and found legal, or noted")
            for f in infos:
                where = f" ({code(f.location())})" if f.location() else ""
                out.append(f"- `{f.rule}`{where}: {markdown(f.message)}")
        quiet = quiet_rules(r, o)
        if quiet:
            out.append("")
            out.append("### Checked, nothing to report")
            out.append(", ".join(f"`{rule}`" for rule in quiet) + ".")
        waived = [f for f in r.findings if f.waived]
        if waived:
            out.append("")
            out.append("### Waived")
            for f in waived:
                out.append(f"- `{f.rule}`: {markdown(f.message)} (waived: {markdown(f.waived)})")
        for error in r.errors:
            out.append(f"\n**pgolf internal error:** {markdown(error)}")
        out.append("")
    out.append(f"<sub>pgolf {__version__}, Python target {o.python_label}.</sub>")
    return "\n".join(out) + "\n"
