"""`pgolf demo`: the whole loop on the embedded sample corpus, on CPU, in a few minutes.

Each stage calls the code behind its own command: the sample corpus becomes token shards (`pgolf
data shards`), the tiny preset trains two seeds under a wallclock cap (`pgolf train`), the runs
become a non-record records folder audited where it lies (`pgolf package`), and the folder's
review is written beside its files (`pgolf review`). Everything goes under --out:

    data/datasets/kjv_sp1024/    the shards        data/tokenizers/   the sample tokenizer
    runs/seed42/ runs/seed314/   the run folders   records/track_non_record_16mb/DATE_pgolf_demo/
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import click

from pgolf_cli.data_cmd import split_summary
from pgolf_cli.errors import PgolfError
from pgolf_cli.review_cmd import review_audit
from pgolf_cli.train_cmd import require_torch, run_training
from trainer.files import write_atomic

# Each stage imports what it runs (the trainer, the packager, the audit) when it starts, so that
# `--help` and a usage error load none of them.

SAMPLE = Path(__file__).resolve().parent / "sample"
SAMPLE_DOCS = SAMPLE / "kjv_chapters.jsonl.xz"
SAMPLE_TOKENIZER = SAMPLE / "kjv_1024_bpe.model"
# Named for what it holds: under fineweb10B_sp1024 the audit would judge the validation split by
# FineWeb's size and fail it; under its own name the audit notes that it cannot judge it.
DATASET = "kjv_sp1024"
VOCAB_SIZE = 1024
# The first chapters of the shuffled corpus, which the tokenizer was not trained on either. Few,
# so that each seed's evaluations (quantized, sliding windows, test-time training) take seconds.
VAL_DOCS = 16
SEEDS = (42, 314)
# The wallclock cap ends training, as on the record track; this step limit is never reached.
MAX_STEPS = 20_000
OUTPUTS = ("data", "runs", "records")  # what --force replaces
NAME, AUTHOR, GITHUB_ID = "pgolf demo", "pgolf demo", "pgolf-demo"


@click.command("demo")
@click.option("--out", type=click.Path(path_type=Path), default=Path("pgolf-demo"),
              show_default=True, help="Folder for everything the demo writes; new or empty.")
@click.option("--seconds", type=float, default=60.0, show_default=True,
              help="Training time cap of each seed (the record track's is 600).")
@click.option("--force", is_flag=True,
              help="Use a non-empty --out, replacing the data/, runs/ and records/ folders there.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the sample's shards and tokenizer go [default: OUT/data]. An earlier "
                   "demo's found there are checked and used again, not written again.")
def demo_command(out: Path, seconds: float, force: bool, data_dir: Path | None) -> None:
    """Run the whole loop on the embedded sample corpus, on CPU, in a few minutes: tokenize it
    into shards, train the tiny preset for seeds 42 and 314, package the two runs into an audited
    non-record records folder, review it, and print a summary.

    \b
    Exit status: 0 when the records folder's audit is clean, 1 when it is not, 2 for bad input.
    """
    if not seconds > 0:  # also refuses nan
        raise PgolfError(f"--seconds {seconds:g} is not a training time; give a number above 0, "
                         "e.g. --seconds 60")
    require_torch("pgolf demo")
    _prepare(out, force)
    started = time.monotonic()
    click.echo(f"pgolf demo: the sample corpus, {len(SEEDS)} seeds of {seconds:g} s training, "
               f"package, audit and review, into {out}/")
    dataset, tokenizer = _data(data_dir or out / "data")
    runs = [_train(out / "runs" / f"seed{seed}", seed, seconds, dataset, tokenizer)
            for seed in SEEDS]
    result = _package(runs, out / "records")
    review = _review(result.folder)
    _summary(result, review, runs, dataset, tokenizer)
    click.echo(f"done in {time.monotonic() - started:.0f} s")
    if result.failed or review.exit_code != 0:
        click.echo(f"pgolf: the audit of {result.folder} is not clean; review.md there says why",
                   err=True)
        sys.exit(1)


def _prepare(out: Path, force: bool) -> None:
    """Refuse an --out that holds anything, unless --force: then remove what a demo writes there."""
    if out.exists() and not out.is_dir():
        raise PgolfError(f"--out {out} is a file; give a new or empty folder")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            parts = ", ".join(f"{name}/" for name in OUTPUTS)
            raise PgolfError(f"--out {out} is not empty; give a new or empty folder, or add --force "
                             f"to replace the {parts} folders in it")
        for name in OUTPUTS:
            shutil.rmtree(out / name, ignore_errors=True)


def _say(stage: str, message: str) -> None:
    click.echo(f"  {stage:<8} {message}")


def _data(root: Path) -> tuple[Path, Path]:
    """The sample corpus as shards in the challenge's format, its tokenizer beside them."""
    from trainer import (
        dataprep,  # numpy and sentencepiece load slowly: only when the demo runs
    )

    from trainer.errors import TrainerError

    started = time.monotonic()
    dataset = root / "datasets" / DATASET
    tokenizer = root / "tokenizers" / SAMPLE_TOKENIZER.name
    if dataset.is_dir() and tokenizer.is_file():  # an earlier demo's: checked, then used again
        if tokenizer.read_bytes() != SAMPLE_TOKENIZER.read_bytes():
            raise PgolfError(f"{tokenizer} is not the sample's tokenizer; give another --data-dir")
        try:
            summary = dataprep.verify_shards(dataset, VOCAB_SIZE)
        except TrainerError as exc:
            raise PgolfError(f"{exc}; remove {dataset} or give another --data-dir") from None
        _say("data", f"{dataset}: {split_summary(summary)} (checked, used again)")
        return dataset, tokenizer
    tokenizer.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SAMPLE_TOKENIZER, tokenizer)
    # One process: the corpus is 4 MB, which a pool of workers takes longer to start than to share.
    summary = dataprep.write_shards(dataprep.iter_documents([SAMPLE_DOCS]), tokenizer, dataset,
                                    VAL_DOCS, workers=1)
    _say("data", f"{dataset}: {split_summary(summary)} ({time.monotonic() - started:.0f} s)")
    return dataset, tokenizer


def _train(run_dir: Path, seed: int, seconds: float, dataset: Path, tokenizer: Path) -> Path:
    from rich.console import Console

    from audits.submission.logparse import parse_log
    from pgolf_cli.run_progress import RunProgress
    started = time.monotonic()
    _say("train", f"seed {seed}: {seconds:g} s of training, then the evaluations; log in "
                  f"{run_dir / 'train.log'}")
    # Absolute paths: the log's Hyperparameters block then finds the data from any folder.
    settings = {"PRESET": "tiny", "SEED": str(seed), "MAX_WALLCLOCK_SECONDS": str(seconds),
                "ITERATIONS": str(MAX_STEPS), "DATA_PATH": str(dataset.resolve()),
                "TOKENIZER_PATH": str(tokenizer.resolve())}
    # One process: on a CPU that is all there is, and on a GPU machine one GPU is plenty.
    progress = RunProgress(f"seed {seed}", Console())
    try:
        run_training(settings, run_dir, nproc=1, on_line=progress.feed)
    finally:
        progress.close()
    log = parse_log((run_dir / "train.log").read_text(encoding="utf-8"))
    _say("train", f"seed {seed}: {log.step_count} steps, val_bpb {log.score.val_bpb:.4f} "
                  f"({time.monotonic() - started:.0f} s)")
    return run_dir


def _package(runs: list[Path], records: Path):
    from pgolf_cli.packaging import PackageError, PackageRequest, package
    started = time.monotonic()
    request = PackageRequest(runs=tuple(runs), name=NAME, author=AUTHOR, github_id=GITHUB_ID,
                             out=records)  # CPU runs of a sample corpus: the non-record track
    try:
        result = package(request)
    except PackageError as exc:
        raise PgolfError(str(exc)) from None
    _say("package", f"{result.folder} ({time.monotonic() - started:.0f} s)")
    if result.track_reason:
        _say("track", f"non-record: {result.track_reason}")
    _say("audit", _verdict(result.report))
    return result


def _review(folder: Path):
    from audits.report.review import render_review
    started = time.monotonic()
    report = review_audit(str(folder))
    write_atomic(folder / "review.md", render_review(report))
    _say("review", f"{_verdict(report)}; {folder / 'review.md'} "
                   f"({time.monotonic() - started:.0f} s)")
    return report


def _verdict(report) -> str:
    """PASS/WARN/FAIL with the count of each severity, then every finding above INFO."""
    from audits.findings import Severity
    from audits.report.text import finding_lines
    sub = report.submissions[0]
    counts = sub.counts()
    head = f"{sub.verdict()} ({', '.join(f'{counts[s]} {s}' for s in reversed(Severity))})"
    return "\n".join([head] + finding_lines(sub, " " * 11))


def _summary(result, review, runs: list[Path], dataset: Path, tokenizer: Path) -> None:
    """Each seed's figures and the submission's, as submission.json has them, with the verdict of
    the review's audit (the package's checks and the smoke import); then where everything went."""
    from rich.console import Console
    from rich.table import Table
    data = result.submission
    table = Table(show_edge=False, pad_edge=False)
    for header in ("seed", "steps", "val_bpb", "artifact bytes", "verdict"):
        table.add_column(header, justify="left" if header == "seed" else "right")
    for seed in data["seeds"]:
        row = data["seed_results"][str(seed)]
        table.add_row(str(seed), f"{row['steps']:,}", f"{row['val_bpb']:.8f}",
                      f"{row['artifact_bytes']:,}", "")
    table.add_row("submission", "", f"{data['val_bpb']:.8f}", f"{data['bytes_total']:,}",
                  review.submissions[0].verdict())
    click.echo()
    Console().print(table)
    click.echo()
    click.echo(f"data:    {dataset.parent.parent} (another demo uses it again with --data-dir)")
    click.echo(f"train:   pgolf train --preset tiny --set DATA_PATH={dataset} --set TOKENIZER_PATH={tokenizer}")
    click.echo(f"runs:    {', '.join(str(run) for run in runs)}")
    click.echo(f"records: {result.folder}")
    click.echo(f"review:  {result.folder / 'review.md'}")
