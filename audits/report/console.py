"""The audit on a terminal, with rich: a verdict line, the seed table and each finding, wrapped
to the terminal's width (a long log name folds onto the next line, never cut), then one summary
line."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from audits.engine import AuditReport
from audits.report.neutral import one_line, terminal
from audits.report.text import fmt_bpb, fmt_int, fmt_ms, quiet_rules
from audits.submission import runs

_STYLE = {"FAIL": "bold red", "WARN": "yellow", "INFO": "dim"}


def print_report(report: AuditReport, detail: str = "normal", summary: str = "") -> None:
    """`detail` as for the text report: quiet, normal or verbose."""
    console = Console()
    o = report.options
    quiet, verbose = detail == "quiet", detail == "verbose"
    if not quiet:
        console.print(f"[bold]pgolf audit[/] target Python {o.python_label} [dim]({o.python_origin})[/]")
    for r in report.submissions:
        sub = r.submission
        verdict = r.verdict(o.strict)
        style = {"ILLEGAL": "bold red", "NEEDS_ACTION": "bold yellow", "PASS": "bold green"}[verdict]
        console.print()
        console.print(Text.assemble((verdict, style), "  ", (one_line(str(sub.root)), "bold")))
        if r.weaker_sandbox():
            console.print(Text(r.weaker_sandbox(), style="yellow"))
        if not quiet:
            console.print(Text(one_line(f"track {sub.track} ({sub.track_origin})"), style="dim"))
        if sub.logs and not quiet:
            table = Table(show_edge=False, pad_edge=False)
            for header in ("seed", "log", "val_bpb", "from line", "train", "eval", "artifact"):
                # the log name folds over the next lines, whole; the figures keep one line each
                table.add_column(header, justify="right" if header not in ("log", "from line") else "left",
                                 overflow="fold", no_wrap=header != "log")
            for log in sub.logs:
                row = runs.seed_row(log)
                src = row["sources"].get("val_bpb", {})
                table.add_row("-" if row["seed"] is None else str(row["seed"]), one_line(row["log"]),
                              fmt_bpb(row["val_bpb"]),
                              f"{row['score_metric']}:{src.get('line')}" if row["score_metric"] else "no final score",
                              fmt_ms(row["train_time_ms"]), fmt_ms(row["eval_time_ms"]),
                              fmt_int(row["artifact_bytes"]))
            console.print(table)
        for f in r.findings:
            if quiet and (f.severity == 0 or f.waived):
                continue
            head = Text.assemble((f"{f.severity!s:<4} ", _STYLE[str(f.severity)]), (f.rule, "bold"))
            if f.location():
                head.append(one_line(f"  {f.location()}"), style="cyan")
            console.print(head)
            console.print(Text(one_line("     " + f.message + (f"  [waived: {f.waived}]" if f.waived else ""))))
            if quiet:
                continue
            if f.via:
                console.print(Text(one_line(f"     via {f.via}"), style="dim"))
            if f.evidence:
                console.print(Text(terminal("     " + f.evidence.replace("\n", "\n     ")), style="dim"))
            if f.hint and f.severity > 0:
                console.print(Text(one_line(f"     fix: {f.hint}"), style="green"))
            if verbose and f.source:
                console.print(Text(one_line(f"     source: {f.source}"), style="dim"))
        for error in r.errors:
            console.print(Text(one_line(f"ERROR {error}"), style="bold red"))
        if verbose:
            console.print(Text("nothing to report: " + (", ".join(quiet_rules(r, o)) or "-"), style="dim"))
    if summary:
        console.print()
        console.print(Text(summary, style="bold"))
