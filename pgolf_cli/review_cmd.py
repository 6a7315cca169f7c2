"""`pgolf review`: the audit of a submission as a Markdown review comment."""

from __future__ import annotations

import sys
from pathlib import Path

import click

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
@smoke_option
@time_limit_option
def review_command(path, base, pr, repo, smoke, time_limit):
    """Print the audit of PATH (a records folder, or a PR checkout with --base) as a review
    comment to paste on the PR. The same folder always gives the same bytes.

    \b
    Examples:
      pgolf review records/track_10min_16mb/2026-04-09_MyRun > review.md
      pgolf review . --base origin/main
      pgolf review --pr 1234 --repo parameter-golf

    Exit status: 0 clean, 1 findings that fail, 2 usage or internal error.
    """
    if (path is None) == (pr is None):
        raise click.UsageError("give either PATH or --pr N")
    from audits.report.review import render_review  # the audit loads here, not for --help
    from audits.submission import InputError
    if pr is not None:
        from pgolf_cli.pr_audit import pr_report
        try:
            with pr_report(repo, pr, base, _options(smoke), time_limit) as report:
                click.echo(render_review(report), nl=False)
        except InputError as exc:
            raise PgolfError(str(exc)) from None
        sys.exit(report.exit_code)
    report = review_audit(path, base, smoke, time_limit)
    click.echo(render_review(report), nl=False)
    sys.exit(report.exit_code)


def review_audit(path: str, base: str | None = None, smoke: bool | None = None,
                 time_limit: float | None = None):
    """The audit a review renders (an AuditReport), within `time_limit` seconds; the smoke import
    runs when torch is installed, unless `smoke` says otherwise."""
    from audits import api, timelimit
    from audits.submission import InputError
    try:
        with timelimit.limit(time_limit):
            return api.audit([path], _options(smoke, base))
    except InputError as exc:
        raise PgolfError(str(exc)) from None


def _options(smoke, base: str | None = None):
    from audits.context import AuditOptions
    # A review reads someone else's submission: the author's `# pgolf: waive` comments do not
    # get to decide its verdict.
    return AuditOptions(base_ref=base, smoke=resolve_smoke(smoke), waiver_comments=False)
