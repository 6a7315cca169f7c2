"""What changes over a run, as data: LR warmdown, Muon momentum warmup, looping, the training
context (TRAIN_SEQ_SCHEDULE) and the EMA.

Progress is the fraction of the training budget used: wallclock time over MAX_WALLCLOCK_SECONDS
minus the GPTQ reserve (so calibration ends inside the 600 s), or steps over ITERATIONS when there
is no cap. Timing makes the schedule hardware-independent in shape: a slower GPU takes fewer steps
but still warms down over the last WARMDOWN_FRAC of its time (WARMDOWN_FRAC, PR #1394).
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn

from trainer.config import Config, seq_stages

# The record's EMA decay and the number of steps it was tuned for (records/.../2026-04-09_...:
# 0.9965 over ~4,550 steps on 8xH100). Its time constant, 1 / (1 - decay) = 286 steps, is 6.3% of
# the run; a run with other step counts keeps that fraction.
REFERENCE_EMA_DECAY = 0.9965
REFERENCE_STEPS = 4550


@dataclasses.dataclass(frozen=True)
class Schedule:
    budget_ms: float | None  # training time allowed, or None to count steps
    iterations: int
    warmdown_frac: float
    min_lr: float
    loop_at: float | None  # progress at which depth recurrence starts, None without loops
    momentum: float
    momentum_start: float
    momentum_warmup_steps: int
    seq_plan: tuple[tuple[float, int], ...]  # (progress until which, sequence length)

    def progress(self, step: int, elapsed_ms: float) -> float:
        if self.budget_ms is None:
            return step / self.iterations
        return elapsed_ms / self.budget_ms

    def lr_scale(self, progress: float) -> float:
        """1, then a linear fall to 0 over the last WARMDOWN_FRAC, floored at MIN_LR."""
        if progress < 1.0 - self.warmdown_frac:
            return 1.0
        return max((1.0 - progress) / self.warmdown_frac, self.min_lr)

    def muon_momentum(self, step: int) -> float:
        if self.momentum_warmup_steps <= 0:
            return self.momentum
        t = min(step / self.momentum_warmup_steps, 1.0)
        return (1.0 - t) * self.momentum_start + t * self.momentum

    def looping(self, progress: float) -> bool:
        return self.loop_at is not None and progress >= self.loop_at

    def seq_len(self, progress: float) -> int:
        return next((n for until, n in self.seq_plan if progress < until), self.seq_plan[-1][1])


def make_schedule(cfg: Config) -> Schedule:
    budget = None
    if cfg.max_wallclock_seconds > 0:
        budget = 1000.0 * (cfg.max_wallclock_seconds - cfg.gptq_reserve_seconds)
    return Schedule(budget_ms=budget, iterations=cfg.iterations, warmdown_frac=cfg.warmdown_frac,
                    min_lr=cfg.min_lr, loop_at=cfg.enable_looping_at if cfg.num_loops else None,
                    momentum=cfg.muon_momentum, momentum_start=cfg.muon_momentum_warmup_start,
                    momentum_warmup_steps=cfg.muon_momentum_warmup_steps,
                    seq_plan=tuple(seq_stages(cfg)) if cfg.train_seq_schedule
                    else ((1.0, cfg.train_seq_len),))


def expected_steps(schedule: Schedule, ms_plain: float, ms_looping: float) -> float:
    """Steps that fit the budget at the measured step times (before and after looping starts)."""
    if schedule.budget_ms is None:
        return float(schedule.iterations)
    loop_at = 1.0 if schedule.loop_at is None else schedule.loop_at
    steps = schedule.budget_ms * (loop_at / ms_plain + (1.0 - loop_at) / ms_looping)
    return min(steps, float(schedule.iterations))


def scaled_ema_decay(steps: float) -> float:
    """The record's decay with its time constant rescaled from 4,550 steps to `steps`.

    0.9965 over a run of 160 steps would leave ~57% of the average at the initial weights; over
    160 steps this gives 0.900."""
    decay = 1.0 - (1.0 - REFERENCE_EMA_DECAY) * REFERENCE_STEPS / max(steps, 1.0)
    return min(max(decay, 0.0), 0.9999)


class EMA:
    """fp32 exponential moving average of a model's state dict, updated after every step
    (PR #287)."""

    def __init__(self, model: nn.Module, decay: float):
        self.decay = decay
        self.names = [k for k, v in model.state_dict().items() if v.is_floating_point()]
        state = model.state_dict()
        self.shadow = [state[k].detach().float().clone() for k in self.names]

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        state = model.state_dict()
        torch._foreach_lerp_(self.shadow, [state[k].detach().float() for k in self.names],
                             1.0 - self.decay)

    @torch.no_grad()
    def copy_to(self, model: nn.Module) -> None:
        state = model.state_dict()
        for name, avg in zip(self.names, self.shadow):
            state[name].copy_(avg)
