"""What people see: the rule list, rule explanations, the rich audit report, finding lines."""

from __future__ import annotations

import inspect
import os
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from audits import catalogue, registry
from audits.engine import AuditReport
from audits.findings import Severity
from audits.report.neutral import terminal
from audits.report.text import fmt_bpb, fmt_int, fmt_ms
from audits.submission import runs

_STYLE = {"FAIL": "bold red", "WARN": "yellow", "INFO": "dim"}


def rules_table() -> str:
    lines = []
    for family in dict.fromkeys(rule.family for rule in catalogue.RULES):
        lines.append(f"{family}:")
        for rule in catalogue.RULES:
            if rule.family == family:
                status = "" if rule.id in registry.CHECKS else "  (not checked by this version)"
                lines.append(f"  {rule.id:<28} {rule.severity!s:<4}  {rule.level:<12}  {rule.summary}{status}")
    return "\n".join(lines) + "\n"


def explain(rule_id: str) -> str:
    rule = catalogue.get(rule_id)
    out = [f"{rule.id} ({rule.severity}, blocks as {rule.level}, {rule.family})", "", rule.summary, ""]
    if rule.conditions:
        out.append("Conditions: " + ", ".join(rule.conditions))
    out.append("Sources:")
    out.extend(f"  - {source}" for source in rule.sources)
    doc = registry.doc(rule_id)
    out.append("")
    out.append(inspect.cleandoc(doc) if doc else "Not checked by this version of pgolf.")
    return "\n".join(out) + "\n"


def print_report(report: AuditReport) -> None:
    console = Console()
    o = report.options
    console.print(f"[bold]pgolf audit[/] target Python {o.python_label} [dim]({o.python_origin})[/]")
    for r in report.submissions:
        sub = r.submission
        verdict = r.verdict(o.strict)
        style = {"ILLEGAL": "bold red", "NEEDS_ACTION": "bold yellow", "PASS": "bold green"}[verdict]
        console.print()
        console.print(Text.assemble((verdict, style), "  ", (terminal(str(sub.root)), "bold")))
        console.print(Text(terminal(f"track {sub.track} ({sub.track_origin})"), style="dim"))
        if sub.logs:
            table = Table(show_edge=False, pad_edge=False)
            for header in ("seed", "log", "val_bpb", "from line", "train", "eval", "artifact"):
                table.add_column(header, justify="right" if header not in ("log", "from line") else "left")
            for log in sub.logs:
                row = runs.seed_row(log)
                src = row["sources"].get("val_bpb", {})
                table.add_row("-" if row["seed"] is None else str(row["seed"]), terminal(row["log"]),
                              fmt_bpb(row["val_bpb"]),
                              f"{row['score_metric']}:{src.get('line')}" if row["score_metric"] else "no final score",
                              fmt_ms(row["train_time_ms"]), fmt_ms(row["eval_time_ms"]),
                              fmt_int(row["artifact_bytes"]))
            console.print(table)
        for f in r.findings:
            head = Text.assemble((f"{f.severity!s:<4} ", _STYLE[str(f.severity)]), (f.rule, "bold"))
            if f.location():
                head.append(terminal(f"  {f.location()}"), style="cyan")
            console.print(head)
            console.print(Text(terminal("     " + f.message + (f"  [waived: {f.waived}]" if f.waived else ""))))
            if f.via:
                console.print(Text(terminal(f"     via {f.via}"), style="dim"))
            if f.evidence:
                console.print(Text(terminal(f"     {f.evidence}"), style="dim"))
            if f.hint and f.severity > 0:
                console.print(Text(terminal(f"     fix: {f.hint}"), style="green"))
        for error in r.errors:
            console.print(Text(terminal(f"ERROR {error}"), style="bold red"))


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    return [terminal(line) for line in out]
