"""`pgolf sweep`: audit many submissions of a clone in parallel and write the table of verdicts."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import click

from pgolf_cli.errors import PgolfError
from pgolf_cli.smoke_option import resolve_smoke, smoke_option
from pgolf_cli.sweep import pool
from trainer.files import write_atomic

FETCH_ALL = "git fetch origin '+refs/pull/*/head:refs/pull/*/head'"


def _pr_range(ctx, param, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", value)
    if not m or int(m.group(2) or m.group(1)) < int(m.group(1)):
        raise click.BadParameter(f"{value!r} is not a range of PR numbers such as 1000-1200")
    return int(m.group(1)), int(m.group(2) or m.group(1))


def _default_memory_mib(jobs: int) -> int:
    """Three quarters of the machine's memory shared by the workers, at most 8 GiB each."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4096
    return max(512, min(8192, int(total * 0.75 / jobs) // 2**20))


@click.command("sweep")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=".", show_default=True,
              help="The clone of the challenge repository.")
@click.option("--prs", callback=_pr_range, metavar="A-B", help="The PRs numbered A to B that the clone has.")
@click.option("--open", "unmerged", is_flag=True,
              help="The PRs not merged into the base (the default selection; see below).")
@click.option("--records", is_flag=True, help="Every records folder of the base, as it is there.")
@click.option("--base", metavar="REF",
              help="The main branch [default: upstream/main, origin/main or main].")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="pgolf-sweep",
              show_default=True, help="Where the table, the reviews and the cache go.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="all cores",
              help="Cases audited at once.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True,
              help="Seconds one case may take; then it is stopped and reported as TIMEOUT.")
@click.option("--memory", type=click.IntRange(min=256), metavar="MIB",
              help="Resident memory one case may hold (its worker and the processes it starts) "
                   "[default: 3/4 of the machine's over --jobs, at most 8192].")
@smoke_option
def sweep_command(repo, prs, unmerged, records, base, out, jobs, timeout, memory, smoke):
    """Audit many submissions of a clone in parallel and write their verdicts as a table:
    sweep.md, sweep.csv, sweep.json and sweep.html (sortable, filterable) under --out, with each
    case's review in reviews/.

    \b
    Examples:
      pgolf sweep --repo parameter-golf --records
      pgolf sweep --repo parameter-golf --prs 1000-1200 --no-smoke
      pgolf sweep --repo parameter-golf --open -j 8

    PRs are read from refs/pull/N/head; fetch them all first with
    `git fetch origin '+refs/pull/*/head:refs/pull/*/head'`. Plain git cannot tell an open PR
    from one closed without merging: --open takes every PR whose head is not merged into the
    base (its head is not an ancestor of the base and no commit on it names the PR). A case whose
    inputs (its folders' content, its change, pgolf and the options) are unchanged is read from
    the cache in --out/.cache instead of audited again.

    Exit status: 0 the table was written (whatever the verdicts), 2 usage or input error.
    """
    if sum((prs is not None, unmerged, records)) > 1:
        raise click.UsageError("give one of --prs A-B, --open, --records")
    from audits.context import AuditOptions  # the audit loads here, not for --help
    from audits.registry import REPO
    from audits.smoke import tempdirs
    from audits.submission import InputError
    from pgolf_cli import pulls
    from pgolf_cli.sweep import table
    from pgolf_cli.sweep.cases import Settings, audit_case, code_hash, select
    from pgolf_cli.sweep.html import to_html
    smoke = resolve_smoke(smoke)
    try:
        main = pulls.resolve_base(repo, base)
        cases = select(repo, main, records=records, prs=prs)
    except InputError as exc:
        raise PgolfError(str(exc)) from None
    selection = ("--records" if records else f"--prs {prs[0]}-{prs[1]}" if prs else "--open")
    if not cases:
        hint = "" if records else f"; fetch the PR refs with `{FETCH_ALL}`"
        raise PgolfError(f"{repo}: nothing to sweep for {selection}{hint}")
    # Someone else's submissions: their `# pgolf: waive` comments do not decide a verdict.
    options = AuditOptions(smoke=smoke, waiver_comments=False)
    settings = Settings(repo.resolve(), options, out / ".cache", code_hash(), base)
    started = time.monotonic()
    results: dict[int, object] = {}
    with _progress(len(cases)) as advance:
        def done(index: int, result: object) -> None:
            results[index] = result
            if isinstance(result, pool.Failure):  # its worker was killed: its folders go now
                tempdirs.remove_stale(Path(tempfile.gettempdir()), tempdirs.STALE)
            advance(result)
        try:
            with tempdirs.sigterm_unwinds():
                pool.run([(case, settings) for case in cases], audit_case, workers=jobs, timeout_s=timeout,
                         memory_bytes=(memory or _default_memory_mib(jobs)) * 2**20, done=done)
        except BaseException:  # SIGTERM or Ctrl-C: the pool killed its workers; their folders go now
            tempdirs.remove_stale(Path(tempfile.gettempdir()), tempdirs.STALE)
            raise
    rows = []
    for index, case in enumerate(cases):
        rows += _rows(case, results[index], out)
    rows.sort(key=lambda r: (r["pr"] is None, r["pr"] or 0, r["folder"] or ""))
    # A PR number is the challenge repository's, whatever remote the clone was made from.
    meta = {"selection": selection, "base": main, "pr_url": f"{REPO}/pull/{{n}}"}
    write_atomic(out / "sweep.json", table.to_json(rows, meta))
    write_atomic(out / "sweep.md", table.to_markdown(rows, meta))
    write_atomic(out / "sweep.csv", table.to_csv(rows))
    write_atomic(out / "sweep.html", to_html(rows, meta))
    cached = sum(1 for r in results.values() if isinstance(r, dict) and r["cached"])
    counts = ", ".join(f"{n} {v}" for v, n in table.summary(rows).items())
    click.echo(f"pgolf sweep: {len(cases)} cases ({cached} from the cache), {len(rows)} rows in "
               f"{time.monotonic() - started:.0f} s: {counts} -> {out / 'sweep.html'}")


def _rows(case, result: object, out: Path) -> list[dict]:
    """The table's rows of one case; its review is written to out/reviews/."""
    head = {"case": case.id, "pr": case.pr}
    if isinstance(result, pool.Failure):
        verdict = "TIMEOUT" if result.kind == "timeout" else "ERROR"
        return [{**head, "title": case.title, "folder": case.folder, "track": None, "claimed_bpb": None,
                 "verdict": verdict, "finding": result.message, "location": "", "counts": {},
                 "findings": [], "errors": [], "review": None}]
    review = Path("reviews") / f"{_slug(case.id)}.md"
    write_atomic(out / review, result["review"])
    return [{**head, **row, "title": case.title or row["name"] or result["subject"],
             "review": review.as_posix()} for row in result["rows"]]


def _slug(case_id: str) -> str:
    """A file name for the case: `pr-1234`, or the folder's path made safe (and unique)."""
    if case_id.startswith("#"):
        return "pr-" + case_id[1:]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", case_id.replace("/", "__"))[:120]
    return f"{safe}-{hashlib.sha256(case_id.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


@contextlib.contextmanager
def _progress(total: int):
    """A live bar on standard error when it is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        yield lambda result: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tally = {"cached": 0, "failed": 0}
    columns = (TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[note]}"))
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task("sweep", total=total, note="")

        def advance(result: object) -> None:
            if isinstance(result, pool.Failure):
                tally["failed"] += 1
            elif result["cached"]:
                tally["cached"] += 1
            progress.update(task, advance=1, note=f"{tally['cached']} from the cache, {tally['failed']} failed")
        yield advance
