"""`pgolf audit`: check submissions against every rule."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from audits import api, catalogue
from audits.context import DEFAULT_PYTHON, AuditOptions, Baseline
from audits.report import FORMATS, console, rules
from audits.submission import LOG_LIMIT, InputError, read_bounded
from audits.submission.gitdiff import CHANGES_LIMIT, parse_changes
from audits.submission.logparse import parse_log
from audits.waivers import load_waivers
from pgolf_cli.errors import PgolfError
from pgolf_cli.files import write_atomic
from pgolf_cli.smoke_option import resolve_smoke, smoke_option


def _rule_list(ctx, param, value: str | None) -> frozenset[str]:
    if not value:
        return frozenset()
    ids = {part.strip() for part in value.split(",") if part.strip()}
    unknown = sorted(ids - set(catalogue.BY_ID))
    if unknown:
        raise click.BadParameter(f"unknown rule {', '.join(unknown)}; see --list-rules")
    return frozenset(ids)


def _python_version(ctx, param, value: str | None):
    if value is None:
        return None
    m = re.fullmatch(r"3\.(\d{1,2})", value.strip())
    if not m or not 8 <= int(m.group(1)) <= 15:
        raise click.BadParameter(f"{value!r} is not a Python version from 3.8 to 3.15 (e.g. 3.10)")
    return (3, int(m.group(1)))


def _baseline(bpb: str | None, run_logs: tuple[str, ...]) -> Baseline | None:
    if bpb and run_logs:
        raise PgolfError("give either --baseline-bpb or --baseline-run, not both")
    if bpb:
        try:
            values = tuple(float(v) for v in bpb.split(",") if v.strip())
        except ValueError:
            raise PgolfError(f"--baseline-bpb {bpb!r}: not a number or comma-separated numbers") from None
        if not values or not all(0 < v < 20 for v in values):
            raise PgolfError(f"--baseline-bpb {bpb!r}: give val_bpb values such as 1.0810")
        return Baseline(values, f"--baseline-bpb {bpb}")
    if run_logs:
        values = []
        for path in run_logs:
            try:
                data, _ = read_bounded(Path(path), LOG_LIMIT)
            except OSError as exc:
                raise PgolfError(f"--baseline-run {path}: cannot read it ({exc.strerror})") from None
            score = parse_log(data.decode("utf-8", "replace"), path).score
            if score is None:
                raise PgolfError(f"--baseline-run {path}: no final val_bpb line in this log")
            values.append(score.val_bpb)
        return Baseline(tuple(values), f"{len(values)} baseline log(s)")
    return None


def _changed_files(path: str | None, base: str | None):
    """The PR's changed paths from a file (`-`: standard input), bounded in size."""
    if path is None:
        return None
    if base is not None:
        raise PgolfError("give either --base or --changed-files, not both")
    origin = "--changed-files " + ("(stdin)" if path == "-" else path)
    try:
        if path == "-":
            data = sys.stdin.buffer.read(CHANGES_LIMIT + 1)
            data, truncated = data[:CHANGES_LIMIT], len(data) > CHANGES_LIMIT
        else:
            data, truncated = read_bounded(Path(path), CHANGES_LIMIT)
    except OSError as exc:
        raise PgolfError(f"{origin}: cannot read it ({exc.strerror})") from None
    if truncated:
        raise PgolfError(f"{origin}: over {CHANGES_LIMIT // 2**20} MiB; give the PR's own list of paths")
    try:
        return tuple(parse_changes(data.decode("utf-8", "surrogateescape"), origin))
    except InputError as exc:
        raise PgolfError(str(exc)) from None


@click.command("audit")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--format", "fmt", type=click.Choice(["auto", "rich", "text", "json", "github", "markdown"]),
              default="auto", show_default=True,
              help="auto: rich on a terminal, text otherwise. json is the stable interface for tools.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str),
              help="Write the report to this file instead of standard output.")
@click.option("--strict", is_flag=True, help="WARN findings also fail (exit 1).")
@click.option("--only", callback=_rule_list, metavar="RULE[,RULE...]", help="Run only these rules.")
@click.option("--skip", callback=_rule_list, metavar="RULE[,RULE...]", help="Do not run these rules.")
@click.option("--waive", multiple=True, metavar="RULE=REASON",
              help="Waive a rule for these submissions, with the reason echoed in the report.")
@click.option("--waivers", "waiver_files", multiple=True, type=click.Path(dir_okay=False, path_type=str),
              help="File of `RULE: reason` lines.")
@click.option("--python", "python", callback=_python_version, metavar="3.X",
              help="Target Python for the syntax gate (default 3.10).")
@click.option("--base", metavar="REF",
              help="PATH is a repository checkout: audit the records folder its HEAD adds over REF "
                   "and check that the change touches nothing else.")
@click.option("--changed-files", metavar="FILE",
              help="The PR's changed paths, one per line as `git diff --name-status` prints them "
                   "(a bare path counts as added; - reads standard input): check the one-folder rule "
                   "without a checkout.")
@click.option("--baseline-bpb", metavar="X[,Y...]", help="Previous record's val_bpb (per seed if several).")
@click.option("--baseline-run", multiple=True, type=click.Path(dir_okay=False, path_type=str),
              metavar="LOG", help="Previous record's seed logs (repeatable).")
@click.option("--p-threshold", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
              show_default=True, help="Significance threshold (organizers later used 0.25).")
@smoke_option
@click.option("--smoke-forward", is_flag=True,
              help="With the smoke import, also build the model with tiny shapes and run one forward "
                   "pass (reported, never failed on).")
@click.option("--probe", is_flag=True,
              help="Run the causality probes on pgolf's own evaluation (CPU, seconds) for folders "
                   "that ship this pgolf version's bundle; the folder's code is never run.")
@click.option("--list-rules", is_flag=True, help="List every rule and exit.")
@click.option("--explain", metavar="RULE", help="Explain one rule and exit.")
def audit_command(paths, fmt, output, strict, only, skip, waive, waiver_files, python, base,
                  changed_files, baseline_bpb, baseline_run, p_threshold, smoke, smoke_forward, probe,
                  list_rules, explain):
    """Check records folders (or a PR's change, with --base) against every rule.

    \b
    Examples:
      pgolf audit records/track_10min_16mb/2026-04-09_MyRun
      pgolf audit . --base origin/main --format github
      git diff --name-status main...pr | pgolf audit FOLDER --changed-files -
      pgolf audit FOLDER --baseline-bpb 1.0810 --format json -o audit.json
    """
    if list_rules:
        click.echo(rules.rules_table(), nl=False)
        return
    if explain:
        rule_id = explain.strip()
        if rule_id not in catalogue.BY_ID:
            raise PgolfError(f"unknown rule {rule_id!r}; `pgolf audit --list-rules` lists them")
        click.echo(rules.explain(rule_id), nl=False)
        return
    if not paths:
        raise click.UsageError("give at least one records folder (or use --list-rules)")
    smoke = resolve_smoke(smoke)
    if smoke_forward and not smoke:
        raise PgolfError("--smoke-forward needs the smoke import; drop --no-smoke")
    try:
        waivers = load_waivers(waive, waiver_files)
    except InputError as exc:
        raise PgolfError(str(exc)) from None
    options = AuditOptions(
        target_python=python or DEFAULT_PYTHON,
        python_origin="--python" if python else AuditOptions.python_origin,
        only=only, skip=skip, strict=strict, waivers=waivers,
        baseline=_baseline(baseline_bpb, baseline_run), p_threshold=p_threshold,
        base_ref=base, changed_files=_changed_files(changed_files, base), smoke=smoke,
        smoke_forward=smoke_forward, probe=probe)
    try:
        report = api.audit(paths, options)
    except InputError as exc:
        raise PgolfError(str(exc)) from None
    if fmt == "auto":
        fmt = "rich" if (output is None and sys.stdout.isatty()) else "text"
    if fmt == "rich":
        console.print_report(report)
    else:
        text = FORMATS[fmt](report)
        if output:
            write_atomic(Path(output), text)
        else:
            click.echo(text, nl=False)
    sys.exit(report.exit_code)

