"""A run's live progress from its console lines: step, loss, tokens/s and time left, then the
evaluations. `pgolf demo` pipes each seed's lines here instead of printing them all, and `pgolf
train` on a terminal its run's lines (printing them too): on a terminal one status line is redrawn
in place; elsewhere a line is printed at each quarter of training."""

from __future__ import annotations

import re

from rich.console import Console

from trainer.progress import progress_status

STEP = re.compile(r"^step:(\d+)/(\d+) train_loss:(\S+) train_time:(\d+)ms step_avg:\S+ tok/s:(\d+)")
BUDGET = re.compile(r"^gptq:reserving \S+ effective=(\d+)ms")  # logged only under a wallclock cap
PHASE = re.compile(r"^(.+?) val_loss:\S+ val_bpb:\S+ eval_time:")
TTT_CHUNK = re.compile(r"^ttt:chunk (\d+)/(\d+)")


class RunProgress:
    def __init__(self, label: str, console: Console):
        self.label, self.console = label, console
        self.budget_ms: float | None = None
        self.quarters_shown = 0
        self.live = console.status("") if console.is_terminal else None
        if self.live is not None:
            self.live.start()

    def feed(self, line: str) -> None:
        if match := BUDGET.match(line):
            self.budget_ms = float(match[1])
        elif match := STEP.match(line):
            step, total, time_ms = int(match[1]), int(match[2]), float(match[4])
            done = max(step / total, time_ms / self.budget_ms if self.budget_ms else 0.0)
            text = progress_status(step, total, float(match[3]), float(match[5]), time_ms, done)
            self._show(f"{self.label}: {text}", quarter=int(4 * done))
        elif match := PHASE.match(line):
            self._show(f"{self.label}: evaluated {match[1]}")
        elif match := TTT_CHUNK.match(line):
            self._show(f"{self.label}: test-time training, chunk {match[1]}/{match[2]}")

    def _show(self, text: str, quarter: int = 0) -> None:
        if self.live is not None:
            self.live.update(text)
        elif quarter > self.quarters_shown:  # a log, not a terminal: a few lines, not hundreds
            self.quarters_shown = quarter
            self.console.print(f"  {'':<8} {text}", markup=False, highlight=False)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
