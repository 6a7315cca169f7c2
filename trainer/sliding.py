"""Scoring the validation stream: windows, per-target NLL, byte counts, bits per byte.

Positions: the stream holds tokens v[0..N-1]; position p predicts v[p+1] from v[0..p], so there
are N-1 positions to score and every one is scored exactly once, in order. A window of at most
`seq_len` tokens ending at position e-1 scores a segment [s, e) of positions with the tokens
before s as context. With stride < seq_len this is the sliding-window evaluation (03-19
SlidingWindowEval record: every scored token sees at least seq_len - stride tokens of context);
with stride == seq_len it is the standard evaluation on non-overlapping windows.

Windows never hold a token past the last one they score: the padding after a short window is
token 0, not the future of the stream (the model is causal, but a reviewer should not have to
trust that).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from trainer.distributed import all_reduce, rank_and_world
from trainer.evaluate import autocast
from trainer.extras import EXTRAS

# (previous ids, target ids, target positions in the stream) -> bytes per target: from the byte
# tables of the tokenizer's pieces, or from the CaseOps byte sidecar by position (evaluate.py).
TargetBytes = Callable[[Tensor, Tensor, Tensor], Tensor]


class ValidationTooShort(ValueError):
    """The validation stream does not fill one evaluation window."""


def check_length(n_tokens: int, seq_len: int) -> None:
    if n_tokens < seq_len + 1:
        raise ValidationTooShort(
            f"the validation set has {n_tokens:,} tokens, fewer than one evaluation window "
            f"(EVAL_SEQ_LEN + 1 = {seq_len + 1:,}); use the full validation split")


def segments(lo: int, hi: int, seq_len: int, stride: int) -> list[tuple[int, int]]:
    """Consecutive position ranges covering [lo, hi). At the start of the stream the first
    segment takes a whole window (those positions have no earlier context to gain); after that,
    `stride` positions per window."""
    if not 0 < stride <= seq_len:
        raise ValueError(f"stride must be in 1..seq_len, got {stride} for seq_len {seq_len}")
    out, s = [], lo
    if s == 0 and hi > 0:
        out.append((0, min(seq_len, hi)))
        s = out[-1][1]
    while s < hi:
        out.append((s, min(s + stride, hi)))
        s += stride
    return out


def rank_share(items: list, rank: int, size: int) -> list:
    """A contiguous, near-equal slice of `items` for this rank."""
    n = len(items)
    return items[n * rank // size: n * (rank + 1) // size]


@dataclasses.dataclass
class Tally:
    """Sums over scored positions, float64 on the device: NLL in nats, targets, target bytes."""

    loss: Tensor
    tokens: Tensor
    bytes: Tensor

    @classmethod
    def zeros(cls, device: torch.device) -> Tally:
        return cls(*(torch.zeros((), dtype=torch.float64, device=device) for _ in range(3)))

    def all_reduce(self) -> None:
        for t in (self.loss, self.tokens, self.bytes):
            all_reduce(t)

    def result(self) -> tuple[float, float]:
        """(val_loss in nats per token, val_bpb): bits per byte = nats / ln 2 * tokens / bytes."""
        tokens, nbytes = self.tokens.item(), self.bytes.item()
        val_loss = self.loss.item() / tokens
        return val_loss, val_loss / math.log(2.0) * tokens / nbytes


@dataclasses.dataclass
class Trace:
    """What the causality probes look at: per-position NLL, how often each position was scored,
    the full log-distribution at watched positions, and the order of score and train events."""

    nll: Tensor  # float64 [positions], nan until scored
    times_scored: Tensor  # int64 [positions]
    watch: frozenset[int] = frozenset()
    rows: dict[int, Tensor] = dataclasses.field(default_factory=dict)
    events: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)

    @classmethod
    def for_stream(cls, n_tokens: int, watch=()) -> Trace:
        n = n_tokens - 1
        return cls(torch.full((n,), math.nan, dtype=torch.float64),
                   torch.zeros(n, dtype=torch.int64), frozenset(watch))


def _windows(tokens: Tensor, starts: Tensor, ends: Tensor, seq_len: int):
    """Input ids, target ids, the targets' stream positions and the scored-position mask of the
    windows scoring positions [starts[i], ends[i]), on the device of `tokens`; plus each window's
    first position. An empty segment (start == end == 0) gives an all-padding window that scores
    nothing."""
    firsts = (ends - seq_len).clamp_min(0)
    pos = firsts[:, None] + torch.arange(seq_len, device=tokens.device)[None, :]
    inside = pos < ends[:, None]
    target_pos = (pos + 1).clamp(max=tokens.numel() - 1)
    x = torch.where(inside, tokens[pos.clamp(max=tokens.numel() - 2)], 0)
    y = torch.where(inside, tokens[target_pos], 0)
    scored = inside & (pos >= starts[:, None])
    return x, y, target_pos, scored, firsts


@torch.no_grad()
def score_segments(logits_fn: Callable[[Tensor], Tensor], tokens: Tensor,
                   segs: list[tuple[int, int]], tally: Tally, target_bytes: TargetBytes, *,
                   seq_len: int, batch_windows: int, trace: Trace | None = None,
                   tilt=None) -> None:
    """Score every position of `segs` once (under no_grad) and add it to `tally`; with `tilt`
    (trainer/ngram_tilt.py), each batch is scored tilted, then its positions join the tilt's table.

    Every batch has exactly `batch_windows` windows (the last is padded with empty ones), so a
    compiled `logits_fn` sees one shape and never recompiles; the segment bounds go to the device
    once and the loss is masked rather than gathered, so the loop never waits for the GPU. Each
    position's loss is the same cross-entropy of the same logits row either way."""
    padded = segs + [(0, 0)] * (-len(segs) % batch_windows)
    bounds = torch.tensor(padded, dtype=torch.int64, device=tokens.device)  # (windows, 2)
    for i in range(0, len(padded), batch_windows):
        starts, ends = bounds[i:i + batch_windows].unbind(1)
        x, y, target_pos, scored, firsts = _windows(tokens, starts, ends, seq_len)
        with autocast(tokens.device):
            logits = logits_fn(x)
        if tilt is None:
            nll = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), reduction="none")
        else:
            hint, boost = tilt.hints(tokens, target_pos - 1)
            nll = tilt.tilted_nll(logits, y, hint, boost)
        nll = nll.view_as(y).double()
        tally.loss += torch.where(scored, nll, 0.0).sum()
        tally.tokens += scored.sum()
        tally.bytes += torch.where(scored, target_bytes(x, y, target_pos), 0).sum()
        if tilt is not None:
            tilt.observe(tokens, (target_pos - 1)[scored])
        if EXTRAS and trace is not None:  # only the audit's probe traces, from the package
            if tilt is not None:  # the distribution scored is the tilted one
                logits = tilt.tilted_logits(logits, hint, boost)
            rows, cols = scored.nonzero(as_tuple=True)
            _record(trace, logits, nll[rows, cols], firsts[rows] + cols,
                    padded[i:i + batch_windows], firsts)


def _record(trace: Trace, logits: Tensor, nll: Tensor, positions: Tensor,
            batch: list[tuple[int, int]], firsts: Tensor) -> None:
    positions = positions.cpu()
    trace.nll[positions] = nll.cpu()
    trace.times_scored.index_add_(0, positions, torch.ones_like(positions))
    for row, (s, e) in enumerate(batch):
        if s == e:  # padding
            continue
        for p in sorted(trace.watch):
            if s <= p < e:
                trace.rows[p] = torch.log_softmax(logits[row, p - int(firsts[row])].double(), -1).cpu()
        trace.events.append(("score", s, e))


def warm_scoring(model, logits_fn: Callable[[Tensor], Tensor], *, seq_len: int,
                 batch_windows: int) -> None:
    """Run `logits_fn` once on random tokens (no validation data) at the one batch shape and in
    the modes score_segments calls it with, so that a compiled `logits_fn` compiles here, before
    the evaluation's timer, and not in the first scored batch. Nothing is scored."""
    device = next(model.parameters()).device
    x = torch.randint(2, model.tok_emb.num_embeddings, (batch_windows, seq_len),
                      generator=torch.Generator().manual_seed(0))
    was_training = model.training
    model.eval()
    with torch.no_grad(), autocast(device):
        logits_fn(x.to(device))
    model.train(was_training)


def eval_stream(model, tokens: Tensor, target_bytes: TargetBytes, *, seq_len: int, stride: int,
                batch_windows: int, logits_fn=None, trace: Trace | None = None,
                tilt=None) -> tuple[float, float]:
    """(val_loss, val_bpb) of `model` on the whole stream, windows split across ranks (each
    rank's n-gram `tilt`, if any, holds the positions that rank scored)."""
    check_length(tokens.numel(), seq_len)
    rank, size = rank_and_world()
    segs = rank_share(segments(0, tokens.numel() - 1, seq_len, stride), rank, size)
    tally = Tally.zeros(tokens.device)
    was_training = model.training
    model.eval()
    score_segments(logits_fn or model.forward_logits, tokens, segs, tally, target_bytes,
                   seq_len=seq_len, batch_windows=batch_windows, trace=trace, tilt=tilt)
    model.train(was_training)
    tally.all_reduce()
    return tally.result()
