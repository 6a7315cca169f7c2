"""A live progress bar for rank 0 on an interactive terminal, drawn with rich when it is installed.

Log lines scroll above the bar; the log file never sees the bar. Without a terminal or without
rich nothing is drawn and the log prints as plain lines.
"""

from __future__ import annotations

import sys

from trainer.runlog import set_echo


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
