"""Evaluating the artifact: read it back, dequantize, load, then every scored phase, timed.

Phases, each logged as `<name> val_loss:X val_bpb:Y eval_time:Zms` and its `<name>_exact` twin
with 8 decimals (the records' lines, which `pgolf audit` reads):
  quantized                  non-overlapping EVAL_SEQ_LEN windows;
  quantized_sliding_window   windows every EVAL_STRIDE tokens (SLIDING_WINDOW_ENABLED);
  quantized_ttt              score-first test-time training (TTT_ENABLED): of the whole model
                             on the stream (TTT_MODE=sgd) or per-document LoRA with phased
                             global SGD (TTT_MODE=lora).
One timer covers the artifact's roundtrip and every phase: `total_eval_time:X.Xs` is the whole
evaluation, not a sum of selected parts. Only the compiles are before it: the scoring graph and
LoRA TTT's pass are each run on random tokens before the timer starts (`scoring:warmup`,
`ttt_lora:warmup`), as the records warm their TTT pass. The warm-ups score nothing, step no
adapter, and the artifact is read after them.
After it, outside the timer, `pruning_cost` says what fitting the cap cost when levels were pruned.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from trainer.compress import read_artifact
from trainer.distributed import REFERENCE_WORLD_SIZE, rank_and_world, synchronize
from trainer.doc_ttt import eval_doc_ttt, warm_lora_pass
from trainer.lora import DocAdapters
from trainer.lqer import fold_corrections
from trainer.ngram_tilt import NgramTilt
from trainer.quant import dequantize_state_dict
from trainer.sliding import TargetBytes, Trace, check_length, eval_stream, warm_scoring
from trainer.ttt import eval_ttt



def _clock(device: torch.device) -> float:
    """Seconds on a clock read after the GPU has finished its queued work."""
    synchronize(device)
    return time.perf_counter()


def _metric(log, name: str, loss: float, bpb: float, seconds: float) -> dict:
    log(f"{name} val_loss:{loss:.4f} val_bpb:{bpb:.4f} eval_time:{seconds * 1000:.0f}ms")
    log(f"{name}_exact val_loss:{loss:.8f} val_bpb:{bpb:.8f}")
    return {"val_loss": loss, "val_bpb": bpb, "seconds": seconds}


def evaluate_artifact(cfg, model: nn.Module, artifact_path: Path, val_tokens: Tensor,
                      target_bytes: TargetBytes, *, log: Callable[[str], None],
                      traces: dict[str, Trace] | None = None) -> dict:
    """Load the artifact into `model` and run every evaluation phase under one timer:
    `quantized` (non-overlapping windows), `quantized_sliding_window` (if enabled) and
    `quantized_ttt` (if enabled). `traces` (phase name -> Trace) records per-position scores for
    the causality probes."""
    traces = traces or {}
    device = val_tokens.device
    check_length(val_tokens.numel(), cfg.eval_seq_len)
    batch_windows = max(1, cfg.val_batch_tokens // (cfg.eval_seq_len * REFERENCE_WORLD_SIZE))
    lora = _lora_pass(cfg, model, device, log) if cfg.ttt_enabled and cfg.ttt_mode == "lora" else None
    logits_fn = _scoring_pass(cfg, model, device, batch_windows, log)
    t_start = _clock(device)
    _load(cfg, model, artifact_path)
    log(f"roundtrip:loaded {artifact_path.name} (decompress, dequantize, load) in "
        f"{_clock(device) - t_start:.1f}s")
    figures = {}
    phases = [("quantized", cfg.eval_seq_len)]
    if cfg.sliding_window_enabled:
        phases.append(("quantized_sliding_window", cfg.eval_stride))
    for name, stride in phases:
        t0 = _clock(device)
        loss, bpb = eval_stream(model, val_tokens, target_bytes, seq_len=cfg.eval_seq_len,
                                stride=stride, batch_windows=batch_windows, logits_fn=logits_fn,
                                trace=traces.get(name), tilt=_tilt(cfg, device))
        figures[name] = _metric(log, name, loss, bpb, _clock(device) - t0)
    if cfg.ttt_enabled:
        figures.update(_ttt_phase(cfg, model, val_tokens, target_bytes, logits_fn, batch_windows, log,
                                  traces.get("quantized_ttt"), lora))
    total = _clock(device) - t_start
    log(f"total_eval_time:{total:.1f}s")
    figures["total_eval_seconds"] = total
    return figures


def pruning_cost(cfg, model: nn.Module, unpruned: Path, val_tokens: Tensor,
                 target_bytes: TargetBytes, pruned_bpb: float, *, log: Callable[[str], None]) -> float:
    """The `quantized` phase again on the artifact before pruning (the file `unpruned`, removed
    after it), in a copy of `model`, whose own weights stay the scored ones; logs and returns the
    val_bpb the pruning cost."""
    other = copy.deepcopy(model)
    _load(cfg, other, unpruned)
    batch_windows = max(1, cfg.val_batch_tokens // (cfg.eval_seq_len * REFERENCE_WORLD_SIZE))
    _, bpb = eval_stream(other, val_tokens, target_bytes, seq_len=cfg.eval_seq_len,
                         stride=cfg.eval_seq_len, batch_windows=batch_windows,
                         logits_fn=_scoring_fn(other, val_tokens.device, cfg.compile))
    log(f"export:fit cost quantized val_bpb {bpb:.5f} before pruning, {pruned_bpb:.5f} after "
        f"({pruned_bpb - bpb:+.5f}; not part of the timed evaluation)")
    if rank_and_world()[0] == 0:  # every rank has read it: eval_stream ends in an all-reduce
        Path(unpruned).unlink()
    return pruned_bpb - bpb


def _load(cfg, model: nn.Module, artifact_path: Path) -> None:
    state = dequantize_state_dict(read_artifact(artifact_path))
    if cfg.lqer_enabled:  # the artifact holds LQER's factors
        state = fold_corrections(state)
    model.load_state_dict(state, strict=True)


# One graph, as training's: without fullgraph, dynamo breaks the graph at the document bounds
# (their count depends on the data) and recompiles the rest for every new count, which costs
# more than the batch with DOC_MASK=1 (docs/trainer.md, "The frontier preset").
SCORING_COMPILE = dict(dynamic=False, fullgraph=True)
# LoRA TTT's windows widen by a chunk per step up to EVAL_SEQ_LEN, padded to a bounded set of
# widths (trainer.doc_ttt.window_width): one graph takes every width.
LORA_TTT_COMPILE = dict(dynamic=True, fullgraph=True)


def _lora_pass(cfg, model: nn.Module, device: torch.device, log) -> tuple:
    """(logits_fn, adapters) of LoRA TTT's pass; compiled, it is warmed here at every shape it
    will meet (trainer.doc_ttt.warm_lora_pass, random tokens), before the evaluation's timer."""
    adapters = DocAdapters(model, cfg.ttt_lora_batch_docs, cfg.ttt_lora_rank, device)
    logits_fn = _scoring_fn(model, device, cfg.compile, LORA_TTT_COMPILE)
    if device.type == "cuda" and cfg.compile:  # as _scoring_fn: compiled
        t0 = _clock(device)
        warm_lora_pass(model, adapters, seq_len=cfg.eval_seq_len, chunk=cfg.ttt_lora_chunk_tokens,
                       logits_fn=logits_fn)
        log(f"ttt_lora:warmup {_clock(device) - t0:.1f}s (random tokens, before the evaluation timer)")
    return logits_fn, adapters


def _scoring_pass(cfg, model: nn.Module, device: torch.device, batch_windows: int, log):
    """The scoring phases' logits_fn; compiled, it is warmed here at its one batch shape
    (trainer.sliding.warm_scoring, random tokens), before the evaluation's timer; on a fresh
    compile cache it would otherwise compile in the first scored batch (docs/benchmarks.md)."""
    logits_fn = _scoring_fn(model, device, cfg.compile)
    if device.type == "cuda" and cfg.compile:  # as _scoring_fn: compiled
        t0 = _clock(device)
        warm_scoring(model, logits_fn, seq_len=cfg.eval_seq_len, batch_windows=batch_windows)
        log(f"scoring:warmup {_clock(device) - t0:.1f}s (random tokens, before the evaluation timer)")
    return logits_fn


def _scoring_fn(model: nn.Module, device: torch.device, compile_model: bool,
                options: dict = SCORING_COMPILE):
    """What the scoring phases call for logits: torch.compile'd on GPU when COMPILE is on (one
    fixed batch shape: sliding.score_segments pads), the plain method otherwise (CPU tests and
    probes). SGD TTT trains eager: compiling its forward and backward took longer than its 180
    steps take without it (docs/benchmarks.md, "Evaluation speed on one H200"); LoRA TTT's
    adapter steps number in
    the thousands and compile (LORA_TTT_COMPILE)."""
    if device.type != "cuda" or not compile_model:
        return model.forward_logits
    return torch.compile(model.forward_logits, **options)


def _tilt(cfg, device: torch.device):
    """A phase's n-gram tilt, its table empty: no phase reads what another scored."""
    return NgramTilt(cfg.ngram_tilt_order, cfg.ngram_tilt_threshold, cfg.ngram_tilt_boost,
                     device) if cfg.ngram_tilt_enabled else None


def _ttt_phase(cfg, model, val_tokens, target_bytes, logits_fn, batch_windows, log, trace,
               lora: tuple | None) -> dict:
    device = val_tokens.device
    t0 = _clock(device)
    if cfg.ttt_mode == "lora":
        sgd = dict(chunk_tokens=cfg.ttt_chunk_tokens, epochs=cfg.ttt_epochs, lr=cfg.ttt_lr,
                   momentum=cfg.ttt_momentum, grad_clip=cfg.ttt_grad_clip,
                   batch_seqs=cfg.ttt_batch_seqs)
        loss, bpb = eval_doc_ttt(model, val_tokens, target_bytes, seq_len=cfg.eval_seq_len,
                                 chunk=cfg.ttt_lora_chunk_tokens,
                                 batch_docs=cfg.ttt_lora_batch_docs, lora_rank=cfg.ttt_lora_rank,
                                 lr=cfg.ttt_lora_lr, phases=cfg.ttt_phases,
                                 phase_docs=cfg.ttt_phase_docs, sgd=sgd, log=log,
                                 logits_fn=lora[0], adapters=lora[1], trace=trace,
                                 tilt=_tilt(cfg, device))
        return {"quantized_ttt": _metric(log, "quantized_ttt", loss, bpb, _clock(device) - t0)}
    loss, bpb = eval_ttt(model, val_tokens, target_bytes, seq_len=cfg.eval_seq_len,
                         stride=cfg.eval_stride, batch_windows=batch_windows,
                         chunk_tokens=cfg.ttt_chunk_tokens, epochs=cfg.ttt_epochs, lr=cfg.ttt_lr,
                         momentum=cfg.ttt_momentum, grad_clip=cfg.ttt_grad_clip,
                         batch_seqs=cfg.ttt_batch_seqs, log=log, logits_fn=logits_fn,
                         trace=trace, tilt=_tilt(cfg, device))
    return {"quantized_ttt": _metric(log, "quantized_ttt", loss, bpb, _clock(device) - t0)}

