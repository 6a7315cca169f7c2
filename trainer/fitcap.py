"""Fit the artifact under the cap by pruning: the least important quantized levels become zero.

Selective pruning, as the record scripts do it for +-1 levels: a level q in a row with scale s,
set to 0, moves its weight by q*s, and GPTQ's measure of what that costs the layer's output is
(q*s)^2 times the Hessian's diagonal at its column (1 without a Hessian). Levels are pruned in
that order, cheapest first, so +-1 levels of small rows in rarely used columns go first.

How many: the quantized levels' size is estimated by their order-0 entropy, per tensor, and scaled
to the compressor by the artifact measured before pruning. The count that brings the estimate just
under the budget is pruned and the artifact compressed again, for real; if it is still over, the
scale is corrected with that measurement and the count raised (a few rounds at most). If even
every level at zero would not fit, nothing does: the caller refuses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
from torch import Tensor

from trainer.quant import QTensor, dequantize

MARGIN = 0.001  # aim this fraction under the budget: the estimate is close, not exact
MAX_ROUNDS = 4


class NothingFits(ValueError):
    """Even with every quantized level at zero the artifact is over the budget."""


def prune_order(quantized: dict, hessians: dict[str, Tensor]) -> tuple[list[str], Tensor, Tensor]:
    """(names, tensor index, flat index) of every nonzero level of every QTensor, cheapest to
    prune first."""
    names = [n for n, v in quantized.items() if isinstance(v, QTensor)]
    costs, which, where = [], [], []
    for i, name in enumerate(names):
        qt = quantized[name]
        q = qt.q.reshape(qt.q.shape[0], -1)
        h = hessians.get(name)
        col = torch.ones(q.shape[1]) if h is None else h.diagonal().float().cpu()
        cost = dequantize(qt).reshape(q.shape) ** 2 * col[None, :]
        flat = torch.nonzero(q.reshape(-1), as_tuple=True)[0]
        costs.append(cost.reshape(-1)[flat])
        which.append(torch.full_like(flat, i))
        where.append(flat)
    if not names:
        return names, torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long)
    order = torch.argsort(torch.cat(costs), stable=True)
    return names, torch.cat(which)[order], torch.cat(where)[order]


def _level_counts(quantized: dict, names: list[str]) -> Tensor:
    """(tensors, 256) counts of each int8 level value, offset by 128."""
    return torch.stack([torch.bincount(quantized[n].q.reshape(-1).long() + 128, minlength=256)
                        for n in names]).double()


def _entropy_bytes(counts: Tensor) -> float:
    """Order-0 entropy of each tensor's levels, summed, in bytes."""
    total = counts.sum(dim=1, keepdim=True).clamp_min(1)
    p = counts / total
    bits = -(counts * torch.where(p > 0, p.log2(), torch.zeros_like(p))).sum()
    return float(bits) / 8


def _pruned_counts(base: Tensor, keys: Tensor, k: int) -> Tensor:
    """Level counts after the first k entries of the prune order are zeroed; `keys` is each
    entry's tensor index * 256 + its level + 128."""
    removed = torch.bincount(keys[:k], minlength=base.numel()).reshape(base.shape).double()
    counts = base - removed
    counts[:, 128] += removed.sum(dim=1)
    return counts


def _levels(quantized: dict, names: list[str], which: Tensor, where: Tensor) -> Tensor:
    """The level of each entry of the prune order."""
    out = torch.empty_like(where)
    for i, name in enumerate(names):
        mask = which == i
        out[mask] = quantized[name].q.reshape(-1)[where[mask]].long()
    return out


def apply_pruning(quantized: dict, names: list[str], which: Tensor, where: Tensor, k: int) -> dict:
    """A copy of `quantized` with the first k entries of the prune order set to zero."""
    out = dict(quantized)
    for i, name in enumerate(names):
        flat = where[:k][which[:k] == i]
        if flat.numel():
            qt = quantized[name]
            q = qt.q.clone()
            q.view(-1)[flat] = 0
            out[name] = dataclasses.replace(qt, q=q)
    return out


def fit_to_budget(quantized: dict, hessians: dict[str, Tensor], budget: int, first: bytes,
                  compress: Callable[[dict], bytes], log: Callable[[str], None]) -> tuple[dict, bytes, int]:
    """Prune `quantized` until `compress(quantized)` is at most `budget` bytes; `first` is its
    artifact unpruned (over the budget). Returns the pruned dict, its artifact and the count of
    levels pruned. Raises NothingFits when even all-zero levels would be over."""
    names, which, where = prune_order(quantized, hessians)
    base = _level_counts(quantized, names)
    keys = which * 256 + _levels(quantized, names, which, where) + 128
    entropy0 = _entropy_bytes(base)

    def saved(k: int) -> float:  # estimated entropy bytes saved by pruning k levels
        return entropy0 - _entropy_bytes(_pruned_counts(base, keys, k))

    # Model: size(k) = len(first) - ratio * saved(k); ratio is compressed bytes per entropy byte.
    need = len(first) - budget * (1 - MARGIN)
    ratio, k, artifact = 1.0, 0, first
    total = which.numel()
    for round_ in range(1, MAX_ROUNDS + 1):
        if ratio * saved(total) < need:  # the estimate says nothing fits: measure the floor
            floor = len(compress(apply_pruning(quantized, names, which, where, total)))
            if floor > budget:
                raise NothingFits(f"even with every quantized level at zero it is {floor:,} bytes")
            ratio = (len(first) - floor) / max(saved(total), 1e-9)
        lo, hi = k + 1, total  # the smallest count whose estimate saves enough
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if ratio * saved(mid) >= need else (mid + 1, hi)
        k = lo
        pruned = apply_pruning(quantized, names, which, where, k)
        artifact = compress(pruned)
        log(f"export:prune round {round_}: {k:,} of {total:,} nonzero levels to zero "
            f"-> {len(artifact):,} bytes (budget {budget:,})")
        if len(artifact) <= budget:
            return pruned, artifact, k
        if len(first) > len(artifact):  # correct the model with this measurement
            ratio = (len(first) - len(artifact)) / max(saved(k), 1e-9)
    raise NothingFits(f"still {len(artifact) - budget:,} bytes over after {MAX_ROUNDS} rounds of "
                      "pruning")
