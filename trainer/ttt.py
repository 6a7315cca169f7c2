"""Score-first test-time training (TTT): adapt the whole model on validation tokens already scored.

Legal shape (README FAQ: "you are only allowed to test-time train on validation set tokens you've
already evaluated your model on"; issue #1017 C3, score before update): the stream is cut into
chunks of TTT_CHUNK_TOKENS positions, and for each chunk, in order,
  1. every position of the chunk is scored once, under no_grad, with the weights as they were
     after the previous chunks, and its loss is added to the reported total;
  2. then, unless it is the last chunk, the model takes SGD steps on that chunk's tokens only.
Nothing is ever rescored (C4). The recipe (SGD, momentum 0.9, cosine learning rate across chunks,
gradient clipping, 3 epochs of 32-sequence batches on 32K-token chunks) is the one of PR #549 and
the 04-06/04-09 SP8192 records (PR #1413, #1493).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
from torch import Tensor, nn

from trainer.distributed import all_reduce, rank_and_world
from trainer.evaluate import autocast
from trainer.extras import EXTRAS
from trainer.sliding import (Tally, TargetBytes, Trace, check_length, rank_share,
                             score_segments, segments)


def chunk_bounds(n_positions: int, chunk_tokens: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + chunk_tokens, n_positions)) for lo in range(0, n_positions, chunk_tokens)]


def cosine_lr(base_lr: float, chunk: int, n_chunks: int) -> float:
    """Cosine decay from `base_lr` at the first chunk to 0 at the last (which is never trained)."""
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * chunk / max(n_chunks - 1, 1)))


def _sync_grads(params: list[nn.Parameter]) -> None:
    """Sum gradients over ranks; each rank already divided its loss by the global batch size."""
    for p in params:
        all_reduce(p.grad)


def train_on_chunk(model: nn.Module, opt: torch.optim.Optimizer, tokens: Tensor, lo: int, hi: int,
                   *, seq_len: int, epochs: int, batch_seqs: int, grad_clip: float,
                   trace: Trace | None = None) -> None:
    """SGD on the whole sequences of positions [lo, hi): inputs v[p..p+L-1], targets v[p+1..p+L],
    all already scored. A global batch of `batch_seqs` sequences is split across ranks; every
    rank takes the same number of steps, so gradient all-reduces always pair up."""
    starts = list(range(lo, hi - seq_len + 1, seq_len))
    if not starts:
        return
    params = [p for p in model.parameters() if p.requires_grad]
    rank, size = rank_and_world()
    ramp = torch.arange(seq_len, device=tokens.device)
    for p in params:  # every rank all-reduces every gradient, its batch share empty or not
        p.grad = torch.zeros_like(p)
    model.train()
    for _ in range(epochs):
        for b in range(0, len(starts), batch_seqs):
            batch = starts[b:b + batch_seqs]
            mine = rank_share(batch, rank, size)
            torch._foreach_zero_([p.grad for p in params])  # one launch, not one per tensor
            if mine:
                idx = torch.tensor(mine, device=tokens.device)[:, None] + ramp
                with autocast(tokens.device):
                    loss = model(tokens[idx], tokens[idx + 1])
                (loss * (len(mine) / len(batch))).backward()
            _sync_grads(params)
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
            opt.step()
    if EXTRAS and trace is not None:
        trace.events.append(("train", starts[0], starts[-1] + seq_len))


def eval_ttt(model: nn.Module, tokens: Tensor, target_bytes: TargetBytes, *, seq_len: int,
             stride: int, batch_windows: int, chunk_tokens: int, epochs: int, lr: float,
             momentum: float, grad_clip: float, batch_seqs: int, log: Callable[[str], None],
             logits_fn=None, trace: Trace | None = None, tilt=None) -> tuple[float, float]:
    """(val_loss, val_bpb) of score-first TTT over the whole stream, tilted by `tilt` if given
    (its table takes each batch this rank scores). Modifies `model` in place."""
    check_length(tokens.numel(), seq_len)
    chunks = chunk_bounds(tokens.numel() - 1, chunk_tokens)
    # `is None`, not `or`: a compiled module has no truth value (it raises on len()).
    logits_fn = model.forward_logits if logits_fn is None else logits_fn
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr, momentum=momentum)
    rank, size = rank_and_world()
    tally = Tally.zeros(tokens.device)
    log(f"ttt:start chunks={len(chunks)} chunk_tokens={chunk_tokens} epochs={epochs} lr={lr} "
        f"momentum={momentum} batch_seqs={batch_seqs} grad_clip={grad_clip} stride={stride}")
    t0 = time.perf_counter()
    for ci, (lo, hi) in enumerate(chunks):
        # 1. Score the chunk first, with weights that have seen only earlier chunks.
        model.eval()
        score_segments(logits_fn, tokens, rank_share(segments(lo, hi, seq_len, stride), rank, size),
                       tally, target_bytes, seq_len=seq_len, batch_windows=batch_windows, trace=trace,
                       tilt=tilt)
        # 2. Then train on the chunk just scored; the last chunk is never trained on.
        is_last_chunk = ci == len(chunks) - 1
        chunk_lr = cosine_lr(lr, ci, len(chunks))
        if not is_last_chunk:
            for group in opt.param_groups:
                group["lr"] = chunk_lr
            train_on_chunk(model, opt, tokens, lo, hi, seq_len=seq_len, epochs=epochs,
                           batch_seqs=batch_seqs, grad_clip=grad_clip, trace=trace)
        _progress(log, tally, ci, len(chunks), chunk_lr if not is_last_chunk else 0.0, t0)
    model.eval()
    tally.all_reduce()
    return tally.result()


def _progress(log, tally: Tally, ci: int, n: int, lr: float, t0: float) -> None:
    running = Tally(tally.loss.clone(), tally.tokens.clone(), tally.bytes.clone())
    running.all_reduce()
    _, bpb = running.result()
    log(f"ttt:chunk {ci + 1}/{n} running_bpb:{bpb:.6f} lr:{lr:.6f} time:{time.perf_counter() - t0:.1f}s")
