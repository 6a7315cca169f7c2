"""`pgolf review`: the audit of a submission as a review comment to paste on its PR."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from pgolf_cli.audit_cmd import _python_version
from pgolf_cli.errors import PgolfError
from pgolf_cli.smoke_option import resolve_smoke, smoke_option
from pgolf_cli.time_limit_option import time_limit_option


@click.command("review")
@click.argument("path", required=False, type=click.Path(path_type=str))
@click.option("--base", metavar="REF",
              help="PATH is a checkout of the PR branch: review the records folder its HEAD adds "
                   "over REF, and check that the change touches nothing else. With --pr: the "
                   "branch the PR is compared with [default: upstream/main, origin/main or main].")
@click.option("--pr", "pr", type=click.IntRange(min=1), metavar="N",
              help="Review PR N of the clone --repo: its refs/pull/N/head, fetched with git when "
                   "the clone lacks it.")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=".",
              show_default=True, help="With --pr: the clone of the challenge repository.")
@click.option("--format", "fmt", type=click.Choice(["json", "markdown", "text"]), default="markdown",
              show_default=True,
              help="markdown: the comment to paste (at most 30 lines, the rest folded); json: the "
                   "audit's stable JSON; text: the audit's plain report.")
@click.option("--python", "python", callback=_python_version, metavar="3.X",
              help="Target Python for the syntax gate (default 3.10).")
@smoke_option
@time_limit_option
def review_command(path, base, pr, repo, fmt, python, smoke, time_limit):
    """Print the audit of PATH (a records folder, or a PR checkout with --base) as a review
    comment to paste on the PR. The same folder always gives the same bytes.

    \b
    Examples:
      pgolf review records/track_10min_16mb/2026-04-09_MyRun > review.md
      pgolf review . --base origin/main
      pgolf review --pr 1234 --repo parameter-golf --format json

    Exit status: 0 clean, 1 findings that fail, 2 usage or internal error.
    """
    if (path is None) == (pr is None):
        raise click.UsageError("give either PATH or --pr N")
    from audits.submission import InputError  # the audit loads here, not for --help
    render = _renderer(fmt)
    if pr is not None:
        from pgolf_cli.pr_audit import pr_report
        try:
            with pr_report(repo, pr, base, _options(smoke, python=python), time_limit) as report:
                click.echo(render(report), nl=False)
        except InputError as exc:
            raise PgolfError(str(exc)) from None
        sys.exit(report.exit_code)
    report = review_audit(path, base, smoke, time_limit, python)
    click.echo(render(report), nl=False)
    sys.exit(report.exit_code)


def _renderer(fmt: str):
    if fmt == "json":
        from audits.report.jsonfmt import render_json
        return render_json
    if fmt == "text":
        from audits.report.text import render_text
        return render_text
    from audits.report.review import render_review
    return render_review


def review_audit(path: str, base: str | None = None, smoke: bool | None = None,
                 time_limit: float | None = None, python: tuple[int, int] | None = None):
    """The audit a review renders (an AuditReport), within `time_limit` seconds; the smoke import
    runs when torch is installed, unless `smoke` says otherwise."""
    from audits import api, timelimit
    from audits.submission import InputError
    try:
        with timelimit.limit(time_limit):
            return api.audit([path], _options(smoke, base, python))
    except InputError as exc:
        raise PgolfError(str(exc)) from None


def _options(smoke, base: str | None = None, python: tuple[int, int] | None = None):
    from audits.context import AuditOptions
    # A review reads someone else's submission: the author's `# pgolf: waive` comments do not
    # get to decide its verdict.
    options = AuditOptions(base_ref=base, smoke=resolve_smoke(smoke), waiver_comments=False)
    if python is not None:
        options = dataclasses.replace(options, target_python=python, python_origin="--python")
    return options
