"""A live progress bar for rank 0 on an interactive terminal, drawn with rich when it is installed.

Log lines scroll above the bar; the log file never sees the bar. Without a terminal or without
rich nothing is drawn and the log prints as plain lines.
"""

from __future__ import annotations

import sys

from trainer.runlog import set_echo


def progress_status(step: int, total: int, loss: float, tokens_per_s: float, elapsed_ms: float,
           fraction: float) -> str:
    """`step 120/20000 loss 4.1234 52,000 tok/s 3:05 left`: the time left is the elapsed time
    scaled by what is left of `fraction`, the share of the training budget (or steps) done."""
    left = elapsed_ms / 1000.0 * (1.0 - fraction) / fraction if fraction > 0 else float("nan")
    return f"step {step}/{total} loss {loss:.4f} {tokens_per_s:,.0f} tok/s {format_clock(left)} left"


def format_clock(seconds: float) -> str:
    """M:SS (H:MM:SS from an hour); `?` before there is anything to scale."""
    if seconds != seconds:
        return "?"
    minutes, secs = divmod(max(0, round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class LiveProgress:
    def __init__(self, progress, console):
        self._progress, self._console = progress, console
        self._task = progress.add_task("train", total=1.0, status="compiling")

    def update(self, fraction: float, status: str) -> None:
        self._progress.update(self._task, completed=min(fraction, 1.0), status=status)

    def stop(self) -> None:
        self._progress.stop()
        set_echo(print)

    def echo(self, message: str) -> None:
        self._console.print(message, markup=False, highlight=False, soft_wrap=True)


def start_progress(enabled: bool) -> LiveProgress | None:
    """The live bar when `enabled` (rank 0), stdout is a terminal and rich is importable."""
    if not (enabled and sys.stdout.isatty()):
        return None
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        return None
    console = Console()
    progress = Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"),
                        TimeElapsedColumn(), TextColumn("{task.fields[status]}"), console=console)
    live = LiveProgress(progress, console)
    progress.start()
    set_echo(live.echo)
    return live
