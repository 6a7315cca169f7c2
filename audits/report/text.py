"""`--format text`: plain lines for terminals without colour, logs and pipes."""

from __future__ import annotations

from audits import __version__, catalogue
from audits.engine import AuditReport
from audits.findings import Severity
from audits.registry import CHECKS, LEVELS, PASS, selected
from audits.report import neutral
from audits.report.neutral import one_line
from audits.submission import runs


def fmt_ms(value) -> str:
    return "-" if value is None else f"{value / 1000:.1f}s"


def fmt_int(value) -> str:
    return "-" if value is None else f"{int(value):,}"


def fmt_bpb(value) -> str:
    return "-" if value is None else f"{value:.8f}".rstrip("0").rstrip(".")


def seed_table(sub) -> list[list[str]]:
    rows = [["seed", "log", "val_bpb", "metric (line)", "train", "eval", "artifact"]]
    for log in sub.logs:
        r = runs.seed_row(log)
        line = r["sources"].get("val_bpb", {}).get("line")
        metric = f"{r['score_metric']} ({line})" if r["score_metric"] else "no final score"
        rows.append(["-" if r["seed"] is None else str(r["seed"]), r["log"], fmt_bpb(r["val_bpb"]),
                     metric, fmt_ms(r["train_time_ms"]), fmt_ms(r["eval_time_ms"]),
                     fmt_int(r["artifact_bytes"])])
    return rows


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def quiet_rules(r, options) -> list[str]:
    """The rules that ran on this submission and found nothing, in catalogue order."""
    return [rule.id for rule in catalogue.RULES if rule.id in CHECKS and selected(rule.id, options)
            and not any(f.rule == rule.id for f in r.findings)]


def render_text(report: AuditReport, detail: str = "normal") -> str:
    """`detail`: quiet (verdicts and the findings that count), normal, or verbose (also each
    finding's source and the rules with nothing to report)."""
    o = report.options
    quiet, verbose = detail == "quiet", detail == "verbose"
    out = [] if quiet else [f"pgolf {__version__} audit; target Python {o.python_label} ({o.python_origin})"]
    for r in report.submissions:
        sub = r.submission
        if not quiet:
            out.append("")
        out.append(one_line(str(sub.root)))
        if not quiet:
            out.append(f"  track: {sub.track} ({sub.track_origin})")
        deciding = r.deciding(o.strict)
        out.append(f"  verdict: {r.verdict(o.strict)}" + (
            f" ({deciding.rule}{' at ' + one_line(deciding.location()) if deciding.location() else ''})"
            if deciding else "") + (f"; {r.weaker_sandbox()}" if r.weaker_sandbox() else ""))
        if sub.logs and not quiet:
            out.append("")
            out.extend(one_line("  " + row) for row in _columns(seed_table(sub)))
        if not quiet:
            out.append("")
        for f in r.findings:
            if quiet and (f.severity == Severity.INFO or f.waived):
                continue
            where = f" {f.location()}" if f.location() else ""
            waived = f" [waived: {f.waived}]" if f.waived else ""
            out.append(one_line(f"  {f.severity} {f.rule}{where}: {f.message}{waived}"))
            if quiet:
                continue
            if f.via:
                out.append(one_line(f"       via: {f.via}"))
            if f.evidence:  # the one field that spans lines, each indented
                out.append("       evidence: " + f.evidence.replace("\n", "\n" + " " * 17))
            if f.hint and f.severity > 0:
                out.append(one_line(f"       fix: {f.hint}"))
            if verbose and f.source:
                out.append(one_line(f"       source: {f.source}"))
        for error in r.errors:
            out.append(one_line(f"  ERROR {error}"))
        if verbose:
            out.append("  nothing to report: " + (", ".join(quiet_rules(r, o)) or "-"))
        if not quiet:
            counts = r.counts()
            waived = sum(1 for f in r.findings if f.waived)
            out.append(f"  summary: {counts[Severity.FAIL]} FAIL, {counts[Severity.WARN]} WARN, "
                       f"{counts[Severity.INFO]} INFO"
                       + (f", {waived} waived" if waived else ""))
    return neutral.terminal("\n".join(out)) + "\n"


def summary_line(report: AuditReport, seconds: float) -> str:
    """The report's last line: the overall verdict, the counts over every folder, the time."""
    strict = report.options.strict
    verdicts = [r.verdict(strict) for r in report.submissions]
    overall = "ERROR" if any(r.errors for r in report.submissions) else min(
        verdicts, key=LEVELS.index, default=PASS)
    n = len(verdicts)
    per_verdict = ", ".join(f"{verdicts.count(v)} {v}" for v in LEVELS if v in verdicts)
    counts = {s: sum(r.counts()[s] for r in report.submissions) for s in Severity}
    waived = sum(1 for r in report.submissions for f in r.findings if f.waived)
    return (f"{overall}: {n} folder{'s' if n != 1 else ''}" + (f" ({per_verdict})" if n > 1 else "")
            + f"; {counts[Severity.FAIL]} FAIL, {counts[Severity.WARN]} WARN, {counts[Severity.INFO]} INFO"
            + (f", {waived} waived" if waived else "") + f"; {seconds:.1f} s")


def finding_lines(sub, indent: str, explanations: dict[str, str] | None = None) -> list[str]:
    """Each FAIL and WARN (not waived) with its place, then its explanation or fix; then errors."""
    out = []
    for f in sub.findings:
        if f.severity == Severity.INFO or f.waived is not None:
            continue
        where = f" {f.location()}" if f.location() else ""
        out.append(f"{indent}{f.severity} {f.rule}{where}: {f.message}")
        if f.severity == Severity.WARN and explanations and f.rule in explanations:
            out.append(f"{indent}     why: {explanations[f.rule]}")
        elif f.hint:
            out.append(f"{indent}     fix: {f.hint}")
    out += [f"{indent}ERROR {error}" for error in sub.errors]
    return [one_line(text) for text in out]
