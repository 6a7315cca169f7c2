"""`pgolf audit`: check submissions against every rule."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click

from pgolf_cli.errors import PgolfError
from pgolf_cli.smoke_option import resolve_smoke, smoke_option
from pgolf_cli.time_limit_option import time_limit_option
from trainer.challenge import SIGNIFICANCE_P
from trainer.files import write_atomic

# The audit (libcst and every rule) is imported where a command needs it, not at the top: `--help`
# and a usage error answer without it.


def _rule_list(ctx, param, value: str | None) -> frozenset[str]:
    if not value:
        return frozenset()
    from audits import catalogue
    ids = {part.strip() for part in value.split(",") if part.strip()}
    unknown = sorted(ids - set(catalogue.BY_ID))
    if unknown:
        raise click.BadParameter(f"unknown rule {', '.join(unknown)}; see --list-rules")
    return frozenset(ids)


def _parse_python(value: str) -> tuple[int, int] | None:
    m = re.fullmatch(r"3\.(\d{1,2})", value.strip())
    return (3, int(m.group(1))) if m and 8 <= int(m.group(1)) <= 15 else None


def _python_version(ctx, param, value: str | None):
    if value is None:
        return None
    version = _parse_python(value)
    if version is None:
        raise click.BadParameter(f"{value!r} is not a Python version from 3.8 to 3.15 (e.g. 3.10)")
    return version


def _records_folders(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The paths with each file inside a records folder (`records/track_*/NAME/...`) replaced by
    that folder, once: what a pre-commit hook passes is the files a commit changes."""
    out = []
    for path in paths:
        p = Path(path)
        if p.is_file():
            p = next((a for a in p.parents if a.parent.name.startswith("track_")
                      and a.parent.parent.name == "records"), p)
        if str(p) not in out:
            out.append(str(p))
    return tuple(out)


def _configuration(paths: tuple[str, ...], base: str | None, changes):
    """The `[tool.pgolf]` table that governs every folder audited (one, or none), read from outside
    the change under audit: with `base`, from the base commit."""
    from pgolf_cli import config
    if base is not None:
        found = [config.at_commit(Path(p), base) for p in paths]
    else:
        found = [config.find(Path(p), changes or ()) if Path(p).is_dir() else config.Config() for p in paths]
    if any(c != found[0] for c in found):
        raise PgolfError("these folders lie under different [tool.pgolf] configurations; "
                         "audit them separately")
    return found[0]


def _refuse_changed(files: tuple[str, ...], paths: tuple[str, ...], base: str) -> None:
    """A waivers file or baseline log that the change under audit adds or modifies would let the
    change configure its own audit: refused."""
    from audits.submission.gitdiff import changed_paths
    for repo in paths:
        touched = {path for status, path in changed_paths(Path(repo), base) if status != "D"}
        top = Path(repo).resolve()
        for name in files:
            try:
                rel = Path(name).resolve().relative_to(top).as_posix()
            except ValueError:
                continue
            if rel in touched:
                raise PgolfError(f"{name}: the change under audit adds or modifies this file; "
                                 "give settings from outside the change")


def _baseline(bpb: str | None, run_logs: tuple[str, ...]):
    from audits.context import Baseline
    from audits.submission import LOG_LIMIT, read_bounded
    from audits.submission.logparse import parse_log
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
    from audits.submission import InputError, read_bounded
    from audits.submission.gitdiff import CHANGES_LIMIT, parse_changes
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
@click.option("--format", "fmt",
              type=click.Choice(["auto", "rich", "text", "json", "github", "markdown", "sarif"]),
              default="auto", show_default=True,
              help="auto: rich on a terminal, text otherwise. json is the stable interface for tools; "
                   "sarif (2.1.0) is for code scanning and editors; github annotates a workflow run.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str),
              help="Write the report to this file instead of standard output.")
@click.option("-q", "--quiet", is_flag=True,
              help="Terminal report: only the verdicts, the FAIL and WARN findings and the summary line.")
@click.option("-v", "--verbose", is_flag=True,
              help="Terminal report: also each finding's source and the rules with nothing to report.")
@click.option("--strict", is_flag=True, help="WARN findings also fail (exit 1).")
@click.option("--exit-zero", is_flag=True,
              help="Exit 0 even when findings fail the audit (2 still means bad input or an internal error).")
@click.option("--no-config", is_flag=True,
              help="Ignore [tool.pgolf] in pyproject.toml (e.g. when reviewing someone else's folder).")
@click.option("--no-waiver-comments", is_flag=True,
              help="Ignore `# pgolf: waive` comments in the submission's code (the author's own).")
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
@click.option("--p-threshold", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=SIGNIFICANCE_P, show_default=True, help="Significance threshold (organizers later used 0.25).")
@smoke_option
@time_limit_option
@click.option("--smoke-forward", is_flag=True,
              help="With the smoke import, also build the model with tiny shapes and run one forward "
                   "pass (reported, never failed on).")
@click.option("--probe", is_flag=True,
              help="Run the causality probes on pgolf's own evaluation (CPU, seconds) for folders "
                   "that ship this pgolf version's bundle; the folder's code is never run.")
@click.option("--list-rules", is_flag=True, help="List every rule and exit.")
@click.option("--explain", metavar="RULE", help="Explain one rule and exit.")
def audit_command(paths, fmt, output, quiet, verbose, strict, exit_zero, no_config, no_waiver_comments,
                  only, skip, waive, waiver_files, python, base, changed_files, baseline_bpb, baseline_run,
                  p_threshold, smoke, time_limit, smoke_forward, probe, list_rules, explain):
    """Check records folders (or a PR's change, with --base) against every rule.

    \b
    Examples:
      pgolf audit records/track_10min_16mb/2026-04-09_MyRun
      pgolf audit . --base origin/main --format github
      git diff --name-status main...pr | pgolf audit FOLDER --changed-files -
      pgolf audit FOLDER --baseline-bpb 1.0810 --format json -o audit.json
      pgolf audit . --base origin/main --format sarif -o pgolf.sarif

    \b
    A file inside a records folder audits that folder (as a pre-commit hook passes them).
    Settings: [tool.pgolf] in the nearest pyproject.toml above the folder, up to the
    checkout's root (python, baseline-bpb, waivers); the command line wins. With --base it is
    read from the base commit, and no file the change adds or modifies configures the audit.
    Waive a finding in code: `# pgolf: waive RULE reason` on its line or the line above
    (not honoured in files the change under audit adds or modifies).
    """
    if not (list_rules or explain):  # the usage errors first: they need no rule loaded
        if not paths:
            raise click.UsageError("give at least one records folder (or use --list-rules)")
        if quiet and verbose:
            raise click.UsageError("give --quiet or --verbose, not both")
    from audits import api, catalogue, timelimit
    from audits.context import DEFAULT_PYTHON, AuditOptions, Baseline
    from audits.report import FORMATS, console, rules, text
    from audits.submission import InputError
    from audits.waivers import load_waivers
    from pgolf_cli import config
    if list_rules:
        click.echo(rules.rules_table(), nl=False)
        return
    if explain:
        rule_id = explain.strip()
        if rule_id not in catalogue.BY_ID:
            raise PgolfError(f"unknown rule {rule_id!r}; `pgolf audit --list-rules` lists them")
        click.echo(rules.explain(rule_id), nl=False)
        return
    started = time.monotonic()
    if base is None:
        paths = _records_folders(paths)
    smoke = resolve_smoke(smoke)
    if smoke_forward and not smoke:
        raise PgolfError("--smoke-forward needs the smoke import; drop --no-smoke")
    changes = _changed_files(changed_files, base)
    try:
        if base is not None:
            _refuse_changed(waiver_files + baseline_run, paths, base)
        settings = config.Config() if no_config else _configuration(paths, base, changes)
    except InputError as exc:
        raise PgolfError(str(exc)) from None
    origin = f"[tool.pgolf] in {settings.path}"
    if python is None and settings.python is not None:
        python = _parse_python(settings.python)
        if python is None:
            raise PgolfError(f"{settings.path}: [tool.pgolf] python {settings.python!r} is not a "
                             "Python version from 3.8 to 3.15 (e.g. \"3.10\")")
        python_origin = origin
    else:
        python_origin = "--python" if python else AuditOptions.python_origin
    try:
        waivers = load_waivers(waive, waiver_files, settings.waivers, str(settings.path))
    except InputError as exc:
        raise PgolfError(str(exc)) from None
    baseline = _baseline(baseline_bpb, baseline_run)
    if baseline is None and settings.baseline_bpb:
        baseline = Baseline(settings.baseline_bpb, f"baseline-bpb of {origin}")
    options = AuditOptions(
        target_python=python or DEFAULT_PYTHON, python_origin=python_origin,
        only=only, skip=skip, strict=strict, waivers=waivers,
        baseline=baseline, p_threshold=p_threshold,
        base_ref=base, changed_files=changes, smoke=smoke,
        smoke_forward=smoke_forward, probe=probe, waiver_comments=not no_waiver_comments)
    try:
        with timelimit.limit(time_limit):
            report = api.audit(paths, options)
    except InputError as exc:
        raise PgolfError(str(exc)) from None
    if fmt == "auto":
        fmt = "rich" if (output is None and sys.stdout.isatty()) else "text"
    detail = "quiet" if quiet else "verbose" if verbose else "normal"
    summary = text.summary_line(report, time.monotonic() - started)
    if fmt == "rich":
        console.print_report(report, detail, summary)
    elif fmt == "text":
        _emit(text.render_text(report, detail) + summary + "\n", output)
    else:
        _emit(FORMATS[fmt](report), output)
    sys.exit(0 if exit_zero and report.exit_code == 1 else report.exit_code)


def _emit(report_text: str, output: str | None) -> None:
    if output:
        write_atomic(Path(output), report_text)
    else:
        click.echo(report_text, nl=False)

