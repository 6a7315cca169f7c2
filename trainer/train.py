"""The training loop, in phase order (the records' `train_model`):

1. compile: torch.compile(fullgraph) on GPUs and, with several processes, DDP;
2. warm up: WARMUP_STEPS untimed steps per graph (looping off, then on) so compilation never
   counts as training time; their step times size the EMA; then weights, optimizer state and the
   data order are restored (root train_gpt.py);
3. train: LR, momentum and looping from the schedule, accumulation, clipping, the step, the EMA;
   after each step the ranks agree on the elapsed time and on a non-finite loss with one
   all-reduce, so they switch looping and stop at the same step;
4. validate every VAL_LOSS_EVERY steps and at the end, with the clock paused;
5. load the EMA weights and evaluate them (`pre-quantization post-ema ...`).
"""

from __future__ import annotations

import contextlib
import copy
import math
import statistics
import time

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from trainer.data import TrainLoader
from trainer.distributed import all_reduce, broadcast, synchronize
from trainer.errors import TrainerError
from trainer.evaluate import evaluate
from trainer.extras import EXTRAS
from trainer.model import GPT
from trainer.optim import Optimizers, build_optimizers
from trainer.progress import LiveProgress, progress_status
from trainer.runlog import log
from trainer.runtime import Run
from trainer.schedule import EMA, REFERENCE_EMA_DECAY, REFERENCE_STEPS, Schedule, expected_steps
from trainer.schedule import make_schedule, scaled_ema_decay


class Stopwatch:
    """Training time in ms, paused for validation; reads wait for the GPU to finish."""

    def __init__(self, device: torch.device):
        self.device, self.total, self.started = device, 0.0, None

    def start(self) -> None:
        synchronize(self.device)
        self.started = time.perf_counter()

    def pause(self) -> None:
        self.total = self.ms()
        self.started = None

    def ms(self) -> float:
        synchronize(self.device)
        running = 0.0 if self.started is None else time.perf_counter() - self.started
        return self.total + 1000.0 * running


def train(run: Run, model: GPT, live: LiveProgress | None = None) -> float:
    """Train `model` in place and leave the EMA weights in it; returns the training time in ms
    counted against the budget (validation excluded)."""
    cfg = run.cfg
    compiled = model
    if cfg.compile and run.device.type == "cuda":
        compiled = torch.compile(model, dynamic=False, fullgraph=True)
    net = compiled
    if run.dist.world_size > 1:
        ids = [run.device.index] if run.device.type == "cuda" else None
        net = DistributedDataParallel(compiled, device_ids=ids, broadcast_buffers=False)
    opts = build_optimizers(cfg, model, run.dist)
    schedule = make_schedule(cfg)
    if schedule.budget_ms is not None:
        log(f"gptq:reserving {cfg.gptq_reserve_seconds:.0f}s, effective={schedule.budget_ms:.0f}ms")
    ms_plain, ms_looping = warm_up(run, model, net, opts, schedule)
    decay = choose_ema_decay(run, schedule, ms_plain, ms_looping)
    ema = EMA(model, decay) if decay > 0 else None
    train_ms = run_steps(run, model, net, compiled, opts, schedule, ema, live)
    if ema is not None:
        log("ema:applying EMA weights")
        ema.copy_to(model)
    t0 = time.perf_counter()
    val_loss, val_bpb = evaluate(compiled, run.val, cfg, run.dist, run.device)
    log(f"pre-quantization post-ema val_loss:{val_loss:.8f} val_bpb:{val_bpb:.8f} "
        f"eval_time:{1000 * (time.perf_counter() - t0):.0f}ms")
    return train_ms


def train_step(run: Run, net: nn.Module, loader: TrainLoader, opts: Optimizers,
               seq_len: int) -> torch.Tensor:
    """One optimizer step over this rank's accumulation micro-batches of `seq_len` windows
    (TrainLoader.next_batch); returns the mean loss."""
    accum = run.dist.grad_accum_steps
    total = torch.zeros((), device=run.device)
    for micro in range(accum):
        x, y, bounds = loader.next_batch(seq_len)
        # DDP all-reduces gradients on the last micro-batch only.
        defer = isinstance(net, DistributedDataParallel) and micro < accum - 1
        with net.no_sync() if defer else contextlib.nullcontext():
            with run.autocast():
                loss = net(x, y, bounds)
            (loss / accum).backward()
        total += loss.detach()
    opts.step()
    return total / accum


def warm_up(run: Run, model: GPT, net: nn.Module, opts: Optimizers,
            schedule: Schedule) -> tuple[float, float]:
    """Run each graph WARMUP_STEPS times, restore the start; median ms/step (looping off, on)."""
    cfg = run.cfg
    if cfg.warmup_steps == 0:
        return math.nan, math.nan
    start_weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    start_opts = copy.deepcopy(opts.state_dict())
    loader = run.train_loader(segment_bounds=model.takes_segment_bounds)
    medians = []
    for looping in [False, True] if cfg.num_loops else [False]:
        model.looping_active = looping
        label = "loop_warmup_step" if looping else "warmup_step"
        if looping:
            log(f"loop_warmup:enabled encoder:{model.encoder_indices} decoder:{model.decoder_indices}")
        if cfg.train_seq_schedule:  # each shorter context is one more graph: a few steps compile it
            for _, seq_len in schedule.seq_plan[:-1]:
                log(f"{label}: train_seq_len {seq_len}, 3 steps")
                for _ in range(min(3, cfg.warmup_steps)):
                    train_step(run, net, loader, opts, seq_len)
        times = []
        for i in range(cfg.warmup_steps):
            synchronize(run.device)
            t0 = time.perf_counter()
            opts.set_muon_momentum(schedule.muon_momentum(i))
            train_step(run, net, loader, opts, cfg.train_seq_len)
            synchronize(run.device)
            times.append(1000.0 * (time.perf_counter() - t0))
            if i < 5 or (i + 1) % 10 == 0 or i + 1 == cfg.warmup_steps:
                log(f"{label}: {i + 1}/{cfg.warmup_steps}")
        medians.append(statistics.median(times[len(times) // 2:]))  # steps after compilation
    loader.close()
    model.looping_active = False
    model.load_state_dict(start_weights)
    opts.load_state_dict(start_opts)
    opts.zero_grad()
    # Rank 0's timing decides, so every rank's EMA has the same decay.
    agreed = broadcast(torch.tensor([medians[0], medians[-1]], device=run.device)).tolist()
    return agreed[0], agreed[1]


def choose_ema_decay(run: Run, schedule: Schedule, ms_plain: float, ms_looping: float) -> float:
    if run.cfg.ema_decay is not None:
        log(f"ema:decay {run.cfg.ema_decay} (EMA_DECAY)")
        return run.cfg.ema_decay
    if schedule.budget_ms is not None and math.isnan(ms_plain):
        log(f"ema:decay {REFERENCE_EMA_DECAY} (not rescaled: no warmup steps were timed)")
        return REFERENCE_EMA_DECAY
    steps = expected_steps(schedule, ms_plain, ms_looping)
    decay = scaled_ema_decay(steps)
    timing = "" if schedule.budget_ms is None else \
        f" at {ms_plain:.0f} ms/step, {ms_looping:.0f} ms/step looping"
    log(f"ema:decay {decay:.5f} for ~{steps:.0f} expected steps{timing} (the record's "
        f"{REFERENCE_EMA_DECAY} is tuned for {REFERENCE_STEPS} steps; EMA_DECAY fixes it)")
    return decay


def run_steps(run: Run, model: GPT, net: nn.Module, compiled: nn.Module, opts: Optimizers,
              schedule: Schedule, ema: EMA | None, live: LiveProgress | None) -> float:
    """Train until ITERATIONS or the budget; returns the training time in ms."""
    cfg, total = run.cfg, run.cfg.iterations
    loader = run.train_loader(segment_bounds=model.takes_segment_bounds)
    watch = Stopwatch(run.device)
    step, elapsed_ms, stop_at, seq_len = 0, 0.0, None, cfg.train_seq_len
    watch.start()
    while True:
        last = step == total or step == stop_at
        if last or (cfg.val_loss_every > 0 and step % cfg.val_loss_every == 0):
            watch.pause()
            val_loss, val_bpb = evaluate(compiled, run.val, cfg, run.dist, run.device)
            log(f"step:{step}/{total} val_loss:{val_loss:.4f} val_bpb:{val_bpb:.4f} "
                f"train_time:{watch.total:.0f}ms step_avg:{watch.total / max(step, 1):.2f}ms")
            watch.start()
        if last:
            if stop_at is not None:
                log(f"stopping_early: wallclock_cap train_time:{watch.total:.0f}ms step:{step}/{total}")
            break
        progress = schedule.progress(step, elapsed_ms)
        if schedule.looping(progress) and not model.looping_active:
            model.looping_active = True
            log(f"layer_loop:enabled step:{step} frac:{progress:.3f} "
                f"encoder:{model.encoder_indices} decoder:{model.decoder_indices}")
        if cfg.train_seq_schedule and schedule.seq_len(progress) != seq_len:
            seq_len = schedule.seq_len(progress)
            log(f"train_seq_len:{seq_len} step:{step} frac:{progress:.3f}")
        opts.set_lr_scale(schedule.lr_scale(progress))
        opts.set_muon_momentum(schedule.muon_momentum(step))
        loss = train_step(run, net, loader, opts, seq_len).item()
        if ema is not None:
            ema.update(model)
        step += 1
        elapsed_ms, diverged = agree(run, watch.ms(), not math.isfinite(loss))
        if diverged:
            raise TrainerError(f"training diverged at step {step}: the loss is not finite "
                               f"({loss:.4g} on rank 0); lower the learning rates")
        if schedule.budget_ms is not None and elapsed_ms >= schedule.budget_ms and stop_at is None:
            stop_at = step
        every = cfg.train_log_every
        tok_s = step * cfg.train_batch_tokens / (elapsed_ms / 1000.0)
        if step <= 5 or (every > 0 and step % every == 0) or step in (stop_at, total):
            log(f"step:{step}/{total} train_loss:{loss:.4f} train_time:{elapsed_ms:.0f}ms "
                f"step_avg:{elapsed_ms / step:.2f}ms tok/s:{tok_s:.0f}")
        if EXTRAS and live is not None:
            # The run ends at the budget or at ITERATIONS, whichever comes first.
            done = max(schedule.progress(step, elapsed_ms), step / total)
            live.update(done, progress_status(step, total, loss, tok_s, elapsed_ms, done))
    loader.close()
    log(f"loader: prefetch {cfg.loader_prefetch}, waited {loader.wait_ms:.0f}ms for batches")
    if run.device.type == "cuda":
        log(f"peak memory allocated: {torch.cuda.max_memory_allocated() // 2**20} MiB "
            f"reserved: {torch.cuda.max_memory_reserved() // 2**20} MiB")
    return watch.total


def agree(run: Run, elapsed_ms: float, diverged: bool) -> tuple[float, bool]:
    """The largest elapsed time and whether any rank's loss was not finite."""
    flags = torch.tensor([elapsed_ms, float(diverged)], dtype=torch.float64, device=run.device)
    elapsed, bad = all_reduce(flags, "max").tolist()
    return elapsed, bad > 0
