"""Causality probes: legality of an evaluation shown by running it, not by reading it.

An evaluation is run on a token stream, then again on altered copies, and the per-position
losses are compared (issue #1017's conditions):
  C1  replace every token after t: no loss of a target at or before t may change;
  C3  replace only the token at t: no earlier loss may change, and the distribution that scored
      the target t must be the very one of the unaltered run (so nothing trained on x_t before
      x_t was scored), and the logged loss must be read from it;
  C4  every position is scored exactly once, and training only ever uses positions already
      scored.
Positions follow `sliding.py`: position p predicts token p+1, so the target t is position t-1.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor

from trainer.artifact import quantize_model
from trainer.compress import compress_artifact, pack_tensors
from trainer.config import load_config
from trainer.files import write_atomic
from trainer.model import GPT
from trainer.scoring import evaluate_artifact
from trainer.shards import BOS_ID
from trainer.sliding import Trace

Evaluate = Callable[[Tensor, dict[str, Trace]], None]  # runs every phase, filling the traces


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    condition: str  # "C1", "C3" or "C4"
    phase: str
    ok: bool
    detail: str


def _traces(phases: list[str], n_tokens: int, watch=()) -> dict[str, Trace]:
    return {phase: Trace.for_stream(n_tokens, watch) for phase in phases}


def _first_difference(a: Tensor, b: Tensor) -> int | None:
    same = (a == b) | (a.isnan() & b.isnan())
    bad = (~same).nonzero()
    return int(bad[0]) if len(bad) else None


def _altered(tokens: Tensor, start: int, stop: int, vocab: int, seed: int) -> Tensor:
    """A copy with tokens[start:stop] replaced by different ids."""
    out = tokens.clone()
    gen = torch.Generator().manual_seed(seed)
    shift = torch.randint(1, vocab, (stop - start,), generator=gen).to(tokens.device)
    out[start:stop] = (tokens[start:stop] + shift) % vocab
    return out


def check_once(phase: str, trace: Trace) -> list[ProbeResult]:
    """C4: each position scored exactly once; each training range already scored before."""
    counts = trace.times_scored
    results = []
    wrong = (counts != 1).nonzero().flatten()
    if len(wrong):
        p = int(wrong[0])
        results.append(ProbeResult("C4", phase, False, f"{len(wrong)} positions not scored exactly "
                                   f"once (position {p}: {int(counts[p])} times)"))
    scored = torch.zeros_like(counts, dtype=torch.bool)
    for kind, lo, hi in trace.events:
        if kind == "score":
            scored[lo:hi] = True
        elif not scored[lo:hi].all():
            p = lo + int((~scored[lo:hi]).nonzero()[0])
            results.append(ProbeResult("C4", phase, False, f"trained on positions {lo}..{hi - 1} "
                                       f"before position {p} was scored"))
            break
    if not results:
        results.append(ProbeResult("C4", phase, True, f"all {len(counts)} positions scored once; "
                                   f"{sum(k == 'train' for k, _, _ in trace.events)} training ranges "
                                   "all already scored"))
    return results


def probe_future(evaluate: Evaluate, tokens: Tensor, base: dict[str, Trace], t: int, vocab: int,
                 ) -> list[ProbeResult]:
    """C1: replace tokens t+1.. and compare the losses of positions 0..t-1 (targets 1..t)."""
    traces = _traces(list(base), tokens.numel())
    evaluate(_altered(tokens, t + 1, tokens.numel(), vocab, seed=t), traces)
    results = []
    for phase, trace in traces.items():
        p = _first_difference(base[phase].nll[:t], trace.nll[:t])
        ok = p is None
        detail = (f"tokens after {t} replaced: losses of targets 1..{t} unchanged" if ok else
                  f"tokens after {t} replaced: the loss of target {p + 1} changed "
                  f"({base[phase].nll[p]:.6f} -> {trace.nll[p]:.6f})")
        results.append(ProbeResult("C1", phase, ok, detail))
    return results


def probe_current(evaluate: Evaluate, tokens: Tensor, base: dict[str, Trace], t: int, vocab: int,
                  ) -> list[ProbeResult]:
    """C3: replace token t only; earlier losses and the distribution that scores target t must
    equal the unaltered run's, and target t's loss must come from that distribution."""
    altered = _altered(tokens, t, t + 1, vocab, seed=t)
    traces = _traces(list(base), tokens.numel(), watch=(t - 1,))
    evaluate(altered, traces)
    results = []
    for phase, trace in traces.items():
        before, after = base[phase].rows.get(t - 1), trace.rows.get(t - 1)
        p = _first_difference(base[phase].nll[:t - 1], trace.nll[:t - 1])
        if p is not None:
            detail, ok = f"token {t} replaced: the loss of earlier target {p + 1} changed", False
        elif before is None or after is None:
            detail, ok = f"target {t} was never scored", False
        elif not torch.equal(before, after):
            gap = (before - after).abs().max().item()
            detail, ok = (f"token {t} replaced: the distribution that scored target {t} changed "
                          f"(max |delta log p| {gap:.3g}): it was updated with x_{t} first"), False
        else:
            logged, implied = trace.nll[t - 1].item(), -after[int(altered[t])].item()
            ok = math.isclose(logged, implied, rel_tol=1e-5, abs_tol=1e-6)
            detail = (f"token {t} replaced: target {t} scored with the unaltered run's distribution"
                      if ok else f"target {t}: logged loss {logged:.6f} is not -log p = {implied:.6f}")
        results.append(ProbeResult("C3", phase, ok, detail))
    return results


def run_probes(evaluate: Evaluate, tokens: Tensor, phases: list[str], positions: list[int],
               vocab: int) -> list[ProbeResult]:
    """Every probe at every position in `positions` (each in 2..len-2), on every phase."""
    base = _traces(phases, tokens.numel(), watch=tuple(t - 1 for t in positions))
    evaluate(tokens, base)
    results = [r for phase, trace in base.items() for r in check_once(phase, trace)]
    for t in positions:
        results += probe_future(evaluate, tokens, base, t, vocab)
        results += probe_current(evaluate, tokens, base, t, vocab)
    return results


PHASES = ["quantized", "quantized_sliding_window", "quantized_ttt"]


def artifact_evaluation(cfg, model, artifact_path, target_bytes) -> Evaluate:
    """pgolf's own evaluation of an artifact (every phase, as `scoring.evaluate_artifact` runs it
    after training), in the form the probes call. Each call reloads the artifact, so TTT starts
    from the same weights every time."""

    def evaluate(tokens: Tensor, traces: dict[str, Trace]) -> None:
        evaluate_artifact(cfg, model, artifact_path, tokens, target_bytes, log=lambda line: None,
                          traces=traces)
    return evaluate


def probe_positions(cfg, n_tokens: int) -> list[int]:
    """Targets to alter: inside the second TTT chunk, the first target of the third chunk (the
    first one scored after a training step), and inside the last chunk. None sits at the end of
    a scored segment, so a window scoring earlier positions also holds altered tokens: a model
    that looks ahead inside its window shows up. With TTT_MODE=lora on the probe's 40-token
    documents: inside a document of the group after the first SGD phase, the first target of a
    document's second adapter chunk (the first scored after an adapter step), and inside a
    document of the last group."""
    c, mid = cfg.ttt_chunk_tokens, cfg.eval_stride // 2
    return [c + c // 2 + mid, 2 * c + 1, n_tokens - 1 - c // 4 - mid]


# The tiny preset at probe scale: 5 TTT chunks of 64 positions, 32-token windows every 8; with
# TTT_MODE=lora, 8-position adapter chunks, 3 documents to a batch, and an SGD phase after each
# of the first two pairs of documents.
PROBE_SETTINGS = {"PRESET": "tiny", "EVAL_SEQ_LEN": "32", "EVAL_STRIDE": "8",
                  "TTT_CHUNK_TOKENS": "64", "TTT_EPOCHS": "2", "TTT_BATCH_SEQS": "2",
                  "TTT_LR": "0.05", "VAL_BATCH_TOKENS": "1024", "COMPILE": "0",
                  "TTT_LORA_CHUNK_TOKENS": "8", "TTT_LORA_BATCH_DOCS": "3", "TTT_LORA_RANK": "4",
                  "TTT_LORA_LR": "0.01", "TTT_PHASES": "2", "TTT_PHASE_DOCS": "4"}
PROBE_TOKENS = 5 * 64 + 1
# The settings that change what the probed evaluation computes beyond the tiny model, with the
# value the full bundle is probed with (the one that runs the code the setting adds); a record
# bundle is probed with the values it pins.
SWITCHES = {"smear_gate_enabled": True, "sparse_attn_gate_enabled": True, "lqer_enabled": True,
            "ttt_mode": "lora", "ngram_tilt_enabled": True}


def switch_settings(pinned: dict | None = None) -> dict[str, str]:
    """SWITCHES as settings: as above for the full bundle (`pinned` None), else as pinned."""
    values = dict(SWITCHES) if pinned is None else {s: pinned[s] for s in SWITCHES if s in pinned}
    return {s.upper(): ("1" if v else "0") if isinstance(v, bool) else str(v)
            for s, v in values.items()}


DOCUMENT_TOKENS = 40  # the probe's stream is packed documents, each opening with BOS


def probe_tokens(vocab: int) -> Tensor:
    """The probe's stream: random documents of DOCUMENT_TOKENS, the second half of the stream a
    copy of the first, so that what reads earlier documents (the n-gram tilt's table) finds
    contexts it has seen at the last probed position."""
    tokens = torch.randint(0, vocab, (PROBE_TOKENS,), generator=torch.Generator().manual_seed(1))
    tokens[::DOCUMENT_TOKENS] = BOS_ID
    half = PROBE_TOKENS // DOCUMENT_TOKENS // 2 * DOCUMENT_TOKENS
    tokens[half:] = tokens[:PROBE_TOKENS - half].clone()
    return tokens


def self_probe(settings: dict[str, str] | None = None) -> list[ProbeResult]:
    """Every probe on pgolf's own evaluation: the trainer's model at the tiny preset plus
    `settings` (SWITCHES, as the probed bundle has them), with random weights (the
    output projections and gates start at zero, which would hide what they read) and looping on,
    round-tripped through an artifact quantized as the export quantizes (`artifact.quantize_model`:
    LQER's factors and AWQ-lite's groups as the settings ask; no Hessians, so round-to-nearest);
    random tokens in packed documents (probe_tokens)."""
    cfg = load_config(env={}, overrides={**PROBE_SETTINGS, **(settings or {})})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny model: fastest, and the same order of sums every run
    try:
        torch.manual_seed(0)
        model = GPT(cfg)
        for p in model.parameters():
            if p.ndim == 2:
                torch.nn.init.normal_(p, std=0.2)
        if model.smear_gate is not None:
            torch.nn.init.ones_(model.smear_gate.lam)
        model.looping_active = cfg.num_loops > 0
        quantized = quantize_model(cfg, model, {}, log=lambda line: None, passthrough_max_numel=1024)
        tokens = probe_tokens(cfg.vocab_size)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "probe.pga"
            write_atomic(path, compress_artifact(pack_tensors(quantized), "lzma"))
            evaluate = artifact_evaluation(cfg, model, path, lambda prev, tgt, pos: torch.ones_like(tgt))
            positions = probe_positions(cfg, PROBE_TOKENS)
            return run_probes(evaluate, tokens, PHASES, positions, cfg.vocab_size)
    finally:
        torch.set_num_threads(threads)
