"""`--format text`: plain lines for terminals without colour, logs and pipes."""

from __future__ import annotations

from audits import __version__
from audits.engine import AuditReport
from audits.findings import Severity
from audits.report import neutral
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


def render_text(report: AuditReport) -> str:
    o = report.options
    out = [f"pgolf {__version__} audit; target Python {o.python_label} ({o.python_origin})"]
    for r in report.submissions:
        sub = r.submission
        out.append("")
        out.append(f"{sub.root}")
        out.append(f"  track: {sub.track} ({sub.track_origin})")
        deciding = r.deciding(o.strict)
        out.append(f"  verdict: {r.verdict(o.strict)}" + (
            f" ({deciding.rule}{' at ' + deciding.location() if deciding.location() else ''})"
            if deciding else ""))
        if sub.logs:
            out.append("")
            out.extend("  " + line for line in _columns(seed_table(sub)))
        out.append("")
        for f in r.findings:
            where = f" {f.location()}" if f.location() else ""
            waived = f" [waived: {f.waived}]" if f.waived else ""
            out.append(f"  {f.severity} {f.rule}{where}: {f.message}{waived}")
            if f.via:
                out.append(f"       via: {f.via}")
            if f.evidence:
                out.append("       evidence: " + f.evidence.replace("\n", "\n" + " " * 17))
            if f.hint and f.severity > 0:
                out.append(f"       fix: {f.hint}")
        for error in r.errors:
            out.append(f"  ERROR {error}")
        counts = r.counts()
        waived = sum(1 for f in r.findings if f.waived)
        out.append(f"  summary: {counts[Severity.FAIL]} FAIL, {counts[Severity.WARN]} WARN, "
                   f"{counts[Severity.INFO]} INFO"
                   + (f", {waived} waived" if waived else ""))
    return neutral.terminal("\n".join(out)) + "\n"


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
    return [neutral.terminal(line) for line in out]
