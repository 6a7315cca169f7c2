"""`pgolf package`: turn seed runs into an audited records folder."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pgolf_cli.errors import PgolfError
from pgolf_cli.package_options import AUTO, CODE_FORMS, TRACK_DIRS


def _bpb_list(ctx, param, value: str | None) -> tuple[float, ...] | None:
    if value is None:
        return None
    try:
        values = tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number or comma-separated numbers, e.g. 1.0810") from None
    if not values or not all(0 < v < 20 for v in values):
        raise click.BadParameter(f"{value!r}: give val_bpb values such as 1.0810")
    return values


@click.command("package")
@click.argument("runs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--name", required=True, help="The submission's name, e.g. \"SP8192 3-layer recurrence\".")
@click.option("--author", required=True, help="Your name, as the leaderboard shows it.")
@click.option("--github-id", required=True, help="Your GitHub user name.")
@click.option("--slug", help="Folder name after the date (default: from --name); letters, digits, "
              "'.', '_' and '-' only.")
@click.option("--track", type=click.Choice([AUTO, *TRACK_DIRS]), default=AUTO, show_default=True,
              help="auto: the record track when the runs can be a record (8xH100, both budgets, the "
                   "challenge's validation set, significant over the record before today), else the "
                   "non-record track, with the reason; a track named is used as it is.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("records"), show_default=True,
              help="The records/ folder of a parameter-golf checkout.")
@click.option("--code-form", type=click.Choice(CODE_FORMS), default="wrapped", show_default=True,
              help="wrapped: minified self-extracting train_gpt.py (fewest counted bytes); plain: "
                   "the file that ran, byte for byte.")
@click.option("--baseline-bpb", callback=_bpb_list, metavar="X[,Y...]",
              help="The previous record's val_bpb (per seed if several), for the significance test.")
@click.option("--force", is_flag=True, help="Replace the folder if it already exists.")
def package_command(runs, name, author, github_id, slug, track, out, code_form, baseline_bpb, force):
    """Build records/<track>/YYYY-MM-DD_<slug>/ from the RUN_DIRs of `pgolf train`, audit it and
    print the PR title and body.

    \b
    Example:
      pgolf package runs/s42 runs/s314 runs/s999 --name "SP8192 legal TTT" \\
          --author "Ada Lovelace" --github-id ada --baseline-bpb 1.0810

    Exit status: 0 when the folder's audit passes (warnings explained), 1 when it fails (the
    folder is kept, marked failing), 2 when the input is refused (nothing is written).
    """
    if not runs:
        raise click.UsageError("give the run folders to package (the RUN_DIR of each `pgolf train --out RUN_DIR`)")
    from pgolf_cli.packaging import PackageError, PackageRequest, package  # with the audit: not for --help
    request = PackageRequest(runs=tuple(runs), name=name, author=author, github_id=github_id,
                             track=track, out=out, code_form=code_form, baseline_bpb=baseline_bpb,
                             slug=slug, force=force)
    try:
        result = package(request)
    except PackageError as exc:
        raise PgolfError(str(exc)) from None
    click.echo(summary(result), nl=False)
    if result.failed:
        click.echo(f"pgolf: the audit of {result.folder} failed; the folder was kept, do not submit "
                   "it as it is", err=True)
        sys.exit(result.report.exit_code)


def summary(result) -> str:
    """What `pgolf package` prints about its PackageResult."""
    from audits.findings import Severity
    from audits.report.text import finding_lines
    sub = result.report.submissions[0]
    files = sorted(p.name for p in result.folder.iterdir())
    counts = sub.counts()
    out = [f"wrote {result.folder}/ ({len(files)} files: {', '.join(files)})"]
    if result.track_reason:
        out.append(f"track: non-record, as the runs cannot be a record ({result.track_reason})")
    if result.failed:
        deciding = sub.deciding()
        why = f": {deciding.rule}: {deciding.message}" if deciding is not None else ""
        out.append(f"audit: {sub.verdict()}{why}")
        out.append(f"AUDIT FAILED ({counts[Severity.FAIL]} FAIL, {counts[Severity.WARN]} WARN): this "
                   "folder is kept for inspection and must not be submitted as it is.")
    else:
        out.append(f"audit: {sub.verdict()} ({counts[Severity.FAIL]} FAIL, {counts[Severity.WARN]} WARN)")
    out += finding_lines(sub, "  ", result.explanations)
    if result.failed:
        return "\n".join(out) + "\n"
    out += ["", "PR title:", result.pr_title, "", "PR body:", result.pr_body]
    return "\n".join(out)
