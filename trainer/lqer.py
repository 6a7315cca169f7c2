"""LQER: a low-rank correction of the quantization error of the worst-quantized matrices (PR #1797,
as the 2026-04-27 record runs it).

After GPTQ, the error E = W - W_hat of each quantized matrix is known at export. For the
LQER_TOP_K matrices with the largest ||E||_F (the embedding and MLP inputs, in the record's log),
the best rank-r approximation of E, A @ B with A = U_r S_r and B = V_r^T from its SVD, is stored
beside the levels, and loading adds it back: W ~ W_hat + A @ B. The factors are quantized
asymmetrically, as the record does: A, which carries the singular values, to 2 bits ([-2, 1]) with
one fp16 scale; B, whose rows are unit vectors, to 4 bits ([-8, 7]) with one fp16 scale per
LQER_GROUP entries of a row. For a 8192 x 512 embedding at rank 4 that is about 35 KB before
compression, for a measurable share of the error.

The factors are ordinary container entries (`<name>.lqer_a`, `.lqer_a_scale`, `.lqer_b`,
`.lqer_b_scale`): the compressor sees them, fitting the cap counts them, and `fold_corrections`
turns them back into weights when the artifact is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import Tensor

from trainer.quant import QTensor, dequantize

SUFFIXES = (".lqer_a", ".lqer_a_scale", ".lqer_b", ".lqer_b_scale")
A_LEVELS, B_LEVELS = (-2, 1), (-8, 7)
_TINY = 1e-10


def lqer_corrections(cfg, state: dict[str, Tensor], quantized: dict,
                     log: Callable[[str], None]) -> dict[str, Tensor]:
    """`corrections` with the run's settings, logged."""
    t0 = time.perf_counter()
    factors = corrections(state, quantized, rank=cfg.lqer_rank, top_k=cfg.lqer_top_k,
                          group=cfg.lqer_group)
    names = sorted({n[:-len(SUFFIXES[0])] for n in factors if n.endswith(SUFFIXES[0])})
    log(f"lqer:rank {cfg.lqer_rank} corrections of {', '.join(names) or 'nothing'} "
        f"({sum(t.numel() for t in factors.values()):,} values) in {time.perf_counter() - t0:.1f}s")
    return factors


def corrections(state: dict[str, Tensor], quantized: dict, *, rank: int, top_k: int,
                group: int) -> dict[str, Tensor]:
    """The container entries correcting the `top_k` quantized matrices of `quantized` whose
    dequantized weights are farthest (Frobenius) from the originals in `state`."""
    errors = {name: state[name].detach().float().cpu() - dequantize(v)
              for name, v in quantized.items() if isinstance(v, QTensor)}
    worst = sorted(errors, key=lambda n: float(errors[n].norm()), reverse=True)[:top_k]
    out: dict[str, Tensor] = {}
    for name in worst:
        U, S, Vh = torch.linalg.svd(errors[name], full_matrices=False)
        r = min(rank, S.numel())
        a, a_scale = _quantize_a(U[:, :r] * S[:r])
        b, b_scale = _quantize_b(Vh[:r], group)
        out.update(zip((name + s for s in SUFFIXES), (a, a_scale, b, b_scale)))
    return out


def _quantize_a(A: Tensor) -> tuple[Tensor, Tensor]:
    """2-bit levels in [-2, 1], one scale: the largest |A| maps to 1.5, between the extremes."""
    scale = (A.abs().max().clamp_min(_TINY) / 1.5).to(torch.float16)
    return torch.clamp(torch.round(A / scale.float()), *A_LEVELS).to(torch.int8), scale


def _quantize_b(B: Tensor, group: int) -> tuple[Tensor, Tensor]:
    """4-bit levels in [-8, 7], one scale per `group` entries of a row (the whole row when
    `group` does not divide it)."""
    g = group if B.shape[1] % group == 0 else B.shape[1]
    blocks = B.reshape(-1, g)
    scale = (blocks.abs().amax(dim=1).clamp_min(_TINY) / 7.5).to(torch.float16)
    levels = torch.clamp(torch.round(blocks / scale.float()[:, None]), *B_LEVELS)
    return levels.to(torch.int8).reshape(B.shape), scale


def correction(a: Tensor, a_scale: Tensor, b: Tensor, b_scale: Tensor) -> Tensor:
    """A @ B (float32) from the stored factors."""
    B = (b.float().reshape(b_scale.numel(), -1) * b_scale.float()[:, None]).reshape(b.shape)
    return (a.float() * a_scale.float()) @ B


def fold_corrections(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """A dequantized state dict with every stored correction added to its matrix and the factor
    entries removed, so `load_state_dict` sees the model's own names only."""
    out = {n: t for n, t in state.items() if not n.endswith(SUFFIXES)}
    for name in [n[:-len(SUFFIXES[0])] for n in state if n.endswith(SUFFIXES[0])]:
        out[name] = out[name] + correction(*(state[name + s] for s in SUFFIXES))
    return out
