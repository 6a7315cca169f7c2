"""`pgolf train`: check the input, bundle train_gpt.py into the run folder, run it.

Settings are the trainer's environment variables (`pgolf train --list-settings`); `--set NAME=VALUE`
and the shortcut options override the environment. Everything is checked here first (settings,
batch arithmetic, shards, tokenizer), so bad input costs one line and no GPU time. The run folder
gets the exact file that ran (train_gpt.py, whose SHA-256 the log records), train.log, the
checkpoint and the export's artifact. One process runs with python, several with torchrun.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click

from pgolf_cli.errors import PgolfError
from trainer.challenge import CAP_BYTES
from trainer.config import (PRESETS, env_name, fields, format_value, load_config,
                            record_settings)
from trainer.errors import TrainerError


def _settings_table(cfg) -> str:
    """Every setting with the value this command would run with (the preset, the environment and
    --set applied), its default where that differs, and its reason."""
    rows = [f"# the {cfg.preset} preset, with the environment and --set applied"]
    for f in fields():
        choices = f" ({'|'.join(f.metadata['choices'])})" if f.metadata["choices"] else ""
        value = getattr(cfg, f.name)
        changed = f"  [default {format_value(f.default)}]" if value != f.default else ""
        rows.append(f"{env_name(f.name)}={format_value(value)}{choices}{changed}\n    {f.metadata['doc']}")
    return "\n".join(rows)


def _config(overrides: dict[str, str]):
    """The run's config, or the one line that says which setting is wrong (before torch loads)."""
    try:
        return load_config(os.environ, overrides)
    except TrainerError as exc:
        raise PgolfError(str(exc)) from None


def _overrides(settings: tuple[str, ...], **shortcuts) -> dict[str, str]:
    out = {}
    for item in settings:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--set")
        out[name.strip().upper()] = value
    out.update({env_name(k): str(v) for k, v in shortcuts.items() if v is not None})
    return out


INTERRUPTED = 130  # the shell's status for a process ended by Ctrl-C (128 + SIGINT)


def _follow(proc: subprocess.Popen, on_line: Callable[[str], None] | None) -> int:
    """Wait for the run (handing its lines to `on_line`) and return its status. Ctrl-C reaches
    the run too (the terminal signals the whole foreground group), so the first one waits for the
    run to write its stop into train.log and exit; a second one kills it."""
    interrupted = False
    while True:
        try:
            if proc.stdout is not None:
                for line in proc.stdout:
                    on_line(line.rstrip("\n"))
            status = proc.wait()
            break
        except KeyboardInterrupt:
            if interrupted:
                proc.kill()
                proc.wait()
                break
            interrupted = True
    if proc.stdout is not None:
        proc.stdout.close()
    return INTERRUPTED if interrupted else status


def require_torch(command: str) -> None:
    """One line instead of an import error where torch is missing (`pip install pgolf`)."""
    if importlib.util.find_spec("torch") is None:
        raise PgolfError(f"{command} needs torch, which is not installed: pip install 'pgolf[train]'")


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


@click.command("train")
@click.option("--preset", type=click.Choice(list(PRESETS)), default=None,
              help="Named overrides: record (default), frontier, baseline, tiny.")
@click.option("--set", "settings", multiple=True, metavar="NAME=VALUE",
              help="Any setting of --list-settings; repeatable; wins over the environment.")
@click.option("--seed", type=int, default=None, help="Shortcut for --set SEED=N.")
@click.option("--data-dir", default=None, help="Shortcut for --set DATA_DIR=PATH.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default runs/RUN_ID).")
@click.option("--nproc", type=int, default=None,
              help="Processes, one per GPU (default: every visible GPU, or 1).")
@click.option("--no-bundle", is_flag=True,
              help="Run the trainer package instead of a bundled train_gpt.py (development; the "
                   "log then names no code hash).")
@click.option("--list-settings", is_flag=True,
              help="List every setting with the value this command would use (--preset, --set and "
                   "the environment applied) and exit.")
def train_command(preset, settings, seed, data_dir, out_dir, nproc, no_bundle, list_settings) -> None:
    """Train a model with the record recipe and write a run folder.

    Exit status: 0 trained, 2 bad input or a failed run, 130 stopped by Ctrl-C (train.log says so).
    """
    overrides = _overrides(settings, preset=preset, seed=seed, data_dir=data_dir)
    cfg = _config(overrides)
    if list_settings:
        click.echo(_settings_table(cfg))
        return
    require_torch("pgolf train")
    out_dir = _run_with_progress(overrides, out_dir, nproc, bundle=not no_bundle)
    click.echo(closing_summary(out_dir), nl=False)


def closing_summary(out_dir: Path) -> str:
    """What the run did, from its train.log: steps, each scored phase's val_bpb and time, the
    artifact's bytes, and the next command."""
    from audits.submission.logparse import parse_log  # the run is over: the parser may load now

    log = parse_log((out_dir / "train.log").read_text(encoding="utf-8", errors="replace"))
    lines = [f"run folder: {out_dir}"]
    train_ms = log.train_time_ms
    seconds = f" in {float(train_ms.value) / 1000:.1f} s" if train_ms is not None else ""
    lines.append(f"  training: {log.step_count or 0} steps{seconds}")
    for phase in log.eval_phases:
        lines.append(f"  {phase.name}: val_bpb {phase.val_bpb:.4f} ({phase.eval_time_ms / 1000:.1f} s)")
    artifact = log.artifact_bytes
    if artifact is not None:
        lines.append(f"  artifact: {int(artifact.value):,} bytes (the cap is {CAP_BYTES:,})")
    lines.append(f"next: pgolf package {out_dir} ... --name NAME --author NAME --github-id ID "
                 "(with the other seeds' run folders)")
    return "\n".join(lines) + "\n"


def _run_with_progress(overrides: dict[str, str], out_dir: Path | None, nproc: int | None,
                       bundle: bool) -> Path:
    """On a terminal the live progress is drawn here, from the run's lines (the record bundle a
    GPU run ships leaves its own display out as an extra); the lines still scroll above it.
    Elsewhere the run prints to the console itself."""
    from rich.console import Console

    from pgolf_cli.run_progress import RunProgress

    console = Console()
    if not console.is_terminal:
        return run_training(overrides, out_dir, nproc, bundle=bundle)
    progress = RunProgress("train", console)

    def show(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
        progress.feed(line)

    try:
        return run_training(overrides, out_dir, nproc, bundle=bundle, on_line=show)
    finally:
        progress.close()


def run_training(overrides: dict[str, str], out_dir: Path | None = None, nproc: int | None = None,
                 bundle: bool = True, on_line: Callable[[str], None] | None = None) -> Path:
    """Check the input, bundle train_gpt.py into the run folder, run it; returns the run folder.

    With GPUs the bundle is the record bundle for these settings (only the code the run reaches,
    what `pgolf package` ships); on a CPU it is the full bundle, with the checks a person at a
    terminal wants (CPU runs are never records).

    `overrides` are settings by their env names and win over the environment. Bad input or a
    failed run ends the command: PgolfError, or exit status 2 once the run printed its own line.
    `on_line` gets the run's console lines as they come instead of the terminal (train.log has
    every line); errors still show.
    """
    cfg = _config(overrides)
    # torch and libcst load only when a run starts, so `--help` and bad settings answer at once.
    from trainer.bundle import write_bundle
    from trainer.distributed import REFERENCE_WORLD_SIZE
    from trainer.preflight import preflight

    try:
        preflight(cfg)
    except TrainerError as exc:
        raise PgolfError(str(exc)) from None
    gpus = _gpu_count()
    nproc = nproc if nproc is not None else max(gpus, 1)
    if nproc < 1 or REFERENCE_WORLD_SIZE % nproc:
        raise PgolfError(f"--nproc {nproc} must divide {REFERENCE_WORLD_SIZE} (1, 2, 4 or 8)")
    out_dir = out_dir or Path("runs") / cfg.run_id
    if (out_dir / "train.log").exists():
        raise PgolfError(f"{out_dir} already holds a run (train.log); choose another --out")
    out_dir.mkdir(parents=True, exist_ok=True)
    if not bundle:
        target = ["-m", "trainer"]
    else:
        try:
            write_bundle(out_dir / "train_gpt.py", settings=record_settings(cfg) if gpus else None)
        except TrainerError as exc:
            raise PgolfError(str(exc)) from None
        target = [str(out_dir / "train_gpt.py")]
    launcher = [sys.executable]
    if nproc > 1:
        launcher += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    env = {**os.environ, **overrides, "OUT_DIR": str(out_dir.resolve()), "RUN_ID": cfg.run_id}
    if on_line is None:
        proc = subprocess.Popen(launcher + target, env=env)
    else:  # unbuffered, so each line arrives when the run prints it
        proc = subprocess.Popen(launcher + target, env={**env, "PYTHONUNBUFFERED": "1"},
                                stdout=subprocess.PIPE, text=True, errors="replace")
    status = _follow(proc, on_line)
    if status == INTERRUPTED:
        click.echo(f"pgolf: training interrupted; {out_dir / 'train.log'} records where it stopped",
                   err=True)
        raise click.exceptions.Exit(INTERRUPTED)
    if status == 2:  # bad input: the run printed its one line
        raise click.exceptions.Exit(2)
    if status != 0:
        raise PgolfError(f"training stopped with exit status {status}; see {out_dir / 'train.log'}")
    return out_dir
