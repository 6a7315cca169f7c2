"""Renderings of an audit report; each format is a pure function of the report. Every string that
came from a submission goes through `neutral` on its way out."""

from __future__ import annotations

from audits.report.github import render_github
from audits.report.jsonfmt import render_json, report_dict
from audits.report.markdown import render_markdown
from audits.report.sarif import render_sarif
from audits.report.text import render_text

FORMATS = {"text": render_text, "json": render_json, "github": render_github,
           "markdown": render_markdown, "sarif": render_sarif}

__all__ = ["FORMATS", "render_github", "render_json", "render_markdown", "render_sarif", "render_text",
           "report_dict"]
