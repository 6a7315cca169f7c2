"""The demo's live progress, read from a run's console lines."""

import io

from rich.console import Console

from pgolf_cli.run_progress import RunProgress
from trainer.progress import format_clock, progress_status


def _lines(steps: int, budget_ms: int, ms_per_step: int) -> list[str]:
    """Console lines as a run under a wallclock cap prints them (every step logged)."""
    lines = ["seed:42", f"gptq:reserving 0s, effective={budget_ms}ms"]
    for step in range(1, steps + 1):
        ms = step * ms_per_step
        lines.append(f"step:{step}/20000 train_loss:{7 - step / 10:.4f} train_time:{ms}ms "
                     f"step_avg:{ms_per_step:.2f}ms tok/s:4096")
    lines += ["pre-quantization post-ema val_loss:4.76 val_bpb:2.24 eval_time:2214ms",
              "ttt:chunk 1/10 running_bpb:2.219443 lr:0.005000 time:1.2s",
              "quantized_ttt val_loss:4.7316 val_bpb:2.2314 eval_time:11303ms"]
    return lines


def test_a_log_gets_one_line_per_quarter_of_the_training_budget():
    out = io.StringIO()
    progress = RunProgress("seed 42", Console(file=out, force_terminal=False, width=200))
    for line in _lines(steps=40, budget_ms=60_000, ms_per_step=1500):  # 40 steps fill the 60 s
        progress.feed(line)
    progress.close()
    shown = [line.strip() for line in out.getvalue().splitlines()]
    assert shown == [
        "seed 42: step 10/20000 loss 6.0000 4,096 tok/s 0:45 left",
        "seed 42: step 20/20000 loss 5.0000 4,096 tok/s 0:30 left",
        "seed 42: step 30/20000 loss 4.0000 4,096 tok/s 0:15 left",
        "seed 42: step 40/20000 loss 3.0000 4,096 tok/s 0:00 left",
    ]


def test_on_a_terminal_one_line_follows_the_run_to_its_evaluations():
    out = io.StringIO()
    progress = RunProgress("seed 42", Console(file=out, force_terminal=True, width=200))
    seen = []
    progress.live.update = seen.append  # what the redrawn line says, in order
    for line in _lines(steps=3, budget_ms=60_000, ms_per_step=1500):
        progress.feed(line)
    progress.close()
    assert seen == ["seed 42: step 1/20000 loss 6.9000 4,096 tok/s 0:58 left",
                    "seed 42: step 2/20000 loss 6.8000 4,096 tok/s 0:57 left",
                    "seed 42: step 3/20000 loss 6.7000 4,096 tok/s 0:56 left",
                    "seed 42: evaluated pre-quantization post-ema",
                    "seed 42: test-time training, chunk 1/10",
                    "seed 42: evaluated quantized_ttt"]


def test_time_left_without_a_wallclock_cap_comes_from_the_steps():
    assert progress_status(15, 60, 5.0, 4096, 30_000, 15 / 60) == \
        "step 15/60 loss 5.0000 4,096 tok/s 1:30 left"
    assert format_clock(3725) == "1:02:05" and format_clock(float("nan")) == "?"
