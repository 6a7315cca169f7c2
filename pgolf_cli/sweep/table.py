"""The sweep's table as Markdown, CSV and JSON: one row per audited folder (or failed case).

Every string in a row may come from a submission (its title, a finding quoting its code), so
each format gets it inert: Markdown escaped to one line of plain text, CSV cells that a
spreadsheet would read as a formula prefixed with a quote, JSON with the C1 and format
characters escaped.
"""

from __future__ import annotations

import csv
import io
import json

from audits import __version__
from audits.report import neutral

SCHEMA_VERSION = 1
COLUMNS = ("pr", "title", "folder", "claimed_bpb", "verdict", "finding")
VERDICTS = ("ILLEGAL", "NEEDS_ACTION", "PASS", "ERROR", "TIMEOUT")


def summary(rows: list[dict]) -> dict[str, int]:
    """Rows per verdict, in VERDICTS order, leaving out the verdicts no row has."""
    counts = {v: sum(1 for r in rows if r["verdict"] == v) for v in VERDICTS}
    return {v: n for v, n in counts.items() if n}


def to_json(rows: list[dict], meta: dict) -> str:
    data = {"schema_version": SCHEMA_VERSION, "pgolf_version": __version__, **meta,
            "verdicts": summary(rows), "rows": rows}
    return neutral.json_text(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"


def to_markdown(rows: list[dict], meta: dict) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in summary(rows).items()) or "no rows"
    out = [f"# pgolf sweep: {meta['selection']}", "",
           f"{len(rows)} rows at base `{meta['base'][:12]}`: {counts}.", "",
           "| PR | title | folder | claimed bpb | verdict | deciding finding |",
           "|---:|---|---|---:|---|---|"]
    for r in rows:
        pr = f"#{r['pr']}" if r["pr"] is not None else ""
        finding = neutral.cell(r["finding"]) + (f" ({neutral.code_cell(r['location'])})" if r.get("location") else "")
        out.append(f"| {pr} | {neutral.cell(r['title'])} | "
                   f"{neutral.code_cell(r['folder']) if r['folder'] else ''} | {_bpb(r['claimed_bpb'])} | "
                   f"{r['verdict']} | {finding} |")
    return "\n".join(out) + "\n"


def to_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*COLUMNS, "location", "track", "review"])
    for r in rows:
        writer.writerow([_cell(r.get(c)) for c in (*COLUMNS, "location", "track", "review")])
    return out.getvalue()


def _bpb(value) -> str:
    return f"{value:.5f}" if isinstance(value, (int, float)) else ""


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    text = neutral.one_line(str(value))
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text
