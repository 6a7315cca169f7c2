"""The sweep's table as one static HTML page: sortable by any column, filtered by text and verdict,
with no request to any server. The rows travel as JSON inside the page and are put in the table
as text, never as markup, so nothing a submission wrote can run in the reviewer's browser."""

from __future__ import annotations

import json
from pathlib import Path

from audits import __version__
from pgolf_cli.sweep.table import summary

TEMPLATE = Path(__file__).with_name("page.html")


def to_html(rows: list[dict], meta: dict) -> str:
    data = {"pgolf_version": __version__, **meta, "verdicts": summary(rows), "rows": rows}
    payload = json.dumps(data, ensure_ascii=True, allow_nan=False)
    # Inside <script> only "</" could end the element; escaped, the JSON value is the same.
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return TEMPLATE.read_text(encoding="utf-8").replace("/*DATA*/", payload)
