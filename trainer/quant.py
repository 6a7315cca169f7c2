"""Post-training quantization: SDClip scales, round-to-nearest, full-Hessian GPTQ, dequantization.

Every large matrix becomes signed integers (int6 for attention/MLP, int8 or int7 for the embedding)
with one fp16 scale per row; small tensors are kept as fp16. The integers sit in int8 containers:
the entropy coder in `compress.py` removes the unused high bits.

SDClip (PR #1394): the clip of a row is k times its standard deviation, so the scale is
`k * std(row) / r` for a signed range [-r, r]. A larger k clips less and spends fewer distinct
levels on typical weights: lower entropy, a smaller artifact, more rounding error.

AWQ-lite (PR #1908): a few groups of adjacent input columns, those whose weights meet the largest
activations, are quantized inside GPTQ at more bits (int8), with a second fp16 scale per row, so
the rest of the matrix's rounding error is pushed around them as usual.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import Tensor

# Tensors up to this many elements (norm gains, gates, scales) are stored as fp16: quantizing
# them saves almost nothing (the records use the same threshold).
PASSTHROUGH_MAX_NUMEL = 65_536
GPTQ_BLOCK = 128  # columns per lazy-update block (GPTQ paper, section 3 "lazy batch-updates")
GPTQ_DAMP = 0.01  # diagonal damping as a fraction of the mean Hessian diagonal (GPTQ paper)
_FP16_TINY = 2.0 ** -24  # smallest positive fp16: keeps a constant row's scale from being zero


@dataclasses.dataclass
class QTensor:
    """A quantized matrix: integer levels in [-r, r], r = 2**(bits-1) - 1, and fp16 row scales."""

    q: Tensor  # int8, shape (rows, cols)
    scale: Tensor  # float16, shape (rows,)
    bits: int
    method: str  # "gptq" or "rtn"; for the log only, not stored in the artifact
    # AWQ-lite's column groups [start, end), whose levels have more bits, and their fp16 row scales.
    fine: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    fine_scale: Tensor | None = None


def level_range(bits: int) -> int:
    if not 2 <= bits <= 8:
        raise ValueError(f"quantization bits must be 2..8, got {bits}")
    return 2 ** (bits - 1) - 1


def sdclip_scale(w: Tensor, clip_sigmas: float, bits: int) -> Tensor:
    """fp16 per-row scale: clip = clip_sigmas * std(row), spread over `level_range(bits)` levels."""
    std = w.float().std(dim=1)
    scale = (clip_sigmas * std / level_range(bits)).to(torch.float16)
    return scale.clamp_min(_FP16_TINY)


def quantize_rtn(w: Tensor, clip_sigmas: float, bits: int) -> QTensor:
    """Round to nearest with SDClip: the fallback when no Hessian is available."""
    r = level_range(bits)
    scale = sdclip_scale(w, clip_sigmas, bits)
    q = torch.clamp(torch.round(w.float() / scale.float()[:, None]), -r, r)
    return QTensor(q.to(torch.int8), scale, bits, "rtn")


def _inverse_hessian_factor(h: Tensor) -> Tensor:
    """Upper Cholesky factor of H^-1, adding damping until H is positive definite."""
    damp = GPTQ_DAMP * h.diagonal().mean().clamp_min(1e-8)
    eye = torch.eye(h.shape[0], dtype=h.dtype, device=h.device)
    for _ in range(4):
        factor, info = torch.linalg.cholesky_ex(h + damp * eye)
        if int(info) == 0:
            return torch.linalg.cholesky(torch.cholesky_inverse(factor), upper=True)
        damp = damp * 10  # numerically singular: damp harder, as GPTQ implementations do
    raise torch.linalg.LinAlgError("Hessian is not positive definite even with heavy damping")


def quantize_gptq(w: Tensor, hessian: Tensor, clip_sigmas: float, bits: int,
                  fine: list[tuple[int, int]] = (), fine_bits: int = 8) -> QTensor:
    """GPTQ (Frantar et al. 2022, arXiv:2210.17323) with the SDClip scales of the original rows.

    Columns are quantized one at a time in order of decreasing Hessian diagonal ("act-order"), and
    each column's rounding error is pushed onto the columns not yet quantized through the inverse
    Hessian, so the layer's output on the calibration inputs moves as little as possible. Updates
    to later blocks are applied once per block of 128 columns. Columns in the `fine` groups use
    `fine_bits` and their own SDClip scales (AWQ-lite).
    """
    r, r_fine = level_range(bits), level_range(fine_bits)
    scale = sdclip_scale(w, clip_sigmas, bits)
    fine_scale = sdclip_scale(w, clip_sigmas, fine_bits) if fine else None
    s = scale.float().to(w.device)
    s_fine = fine_scale.float().to(w.device) if fine else None
    is_fine = torch.zeros(w.shape[1], dtype=torch.bool)
    for start, end in fine:
        is_fine[start:end] = True
    W = w.detach().float().clone()
    H = hessian.detach().float().to(w.device).clone()
    dead = H.diagonal() == 0  # inputs that were always zero: any weight there is free
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    order = torch.argsort(H.diagonal(), descending=True)
    W, H = W[:, order], H[order][:, order]
    U = _inverse_hessian_factor(H)
    Q = torch.empty_like(W, dtype=torch.int8)
    cols = W.shape[1]
    fine_at = is_fine[order.cpu()].tolist()  # per permuted column, read without a device sync
    for b0 in range(0, cols, GPTQ_BLOCK):
        b1 = min(b0 + GPTQ_BLOCK, cols)
        block, Ub = W[:, b0:b1].clone(), U[b0:b1, b0:b1]
        err = torch.empty_like(block)
        for j in range(b1 - b0):
            sj, rj = (s_fine, r_fine) if fine_at[b0 + j] else (s, r)
            q = torch.clamp(torch.round(block[:, j] / sj), -rj, rj)
            Q[:, b0 + j] = q.to(torch.int8)
            err[:, j] = (block[:, j] - q * sj) / Ub[j, j]
            block[:, j:] -= err[:, j, None] * Ub[j, None, j:]
        W[:, b1:] -= err @ U[b0:b1, b1:]
    return QTensor(Q[:, torch.argsort(order)].cpu(), scale.cpu(), bits, "gptq", list(fine),
                   None if fine_scale is None else fine_scale.cpu())


def dequantize(qt: QTensor) -> Tensor:
    """float32 weights from integer levels and row scales."""
    w = qt.q.float() * qt.scale.float()[:, None]
    for start, end in qt.fine:
        w[:, start:end] = qt.q[:, start:end].float() * qt.fine_scale.float()[:, None]
    return w


def salient_groups(state: dict[str, Tensor], hessians: dict[str, Tensor], *, size: int,
                   count: int) -> dict[str, list[tuple[int, int]]]:
    """AWQ-lite's choice: the `count` groups of `size` adjacent input columns, over every matrix
    with a Hessian, whose weights meet the largest inputs. A group's score is the sum over its
    columns of rms(input) * mean |weight|, rms(input) being the root of the Hessian's diagonal
    (each Hessian is X^T X over the same calibration rows, so scores compare across matrices)."""
    scored = []
    for name, h in hessians.items():
        w = state[name].detach().float().cpu()
        if w.shape[1] % size:
            continue
        col = h.diagonal().float().cpu().clamp_min(0).sqrt() * w.abs().mean(dim=0)
        for g, score in enumerate(col.view(-1, size).sum(dim=1).tolist()):
            scored.append((score, name, g * size))
    chosen: dict[str, list[tuple[int, int]]] = {}
    for _, name, start in sorted(scored, reverse=True)[:count]:
        chosen.setdefault(name, []).append((start, start + size))
    return {name: sorted(groups) for name, groups in chosen.items()}


def quantize_state_dict(state: dict[str, Tensor], hessians: dict[str, Tensor], *,
                        embeddings: set[str], matrix_bits: int, embed_bits: int,
                        matrix_clip_sigmas: float, embed_clip_sigmas: float,
                        group_clip_sigmas: dict[str, float] | None = None,
                        fine: dict[str, list[tuple[int, int]]] | None = None, fine_bits: int = 8,
                        passthrough_max_numel: int = PASSTHROUGH_MAX_NUMEL,
                        ) -> dict[str, QTensor | Tensor]:
    """Quantize every 2-D float tensor above `passthrough_max_numel` elements: GPTQ where a
    Hessian was collected, round-to-nearest otherwise. Names in `embeddings` use the embedding's
    bits and clip; a matrix of a module named in `group_clip_sigmas` (`mlp`, `attn`: a part of
    its dotted name) uses that clip; the column groups `fine` names (salient_groups) get
    `fine_bits`; small float tensors become fp16 (or stay as they are if fp16 would overflow);
    other tensors pass through unchanged."""
    out: dict[str, QTensor | Tensor] = {}
    groups, fine = group_clip_sigmas or {}, fine or {}
    for name, tensor in state.items():
        t = tensor.detach()
        if t.is_floating_point() and t.ndim == 2 and t.numel() > passthrough_max_numel:
            group_sigmas = next((k for part, k in groups.items() if part in name.split(".")), None)
            bits, sigmas = ((embed_bits, embed_clip_sigmas) if name in embeddings else
                            (matrix_bits, matrix_clip_sigmas if group_sigmas is None else group_sigmas))
            h = hessians.get(name)
            out[name] = quantize_gptq(t, h, sigmas, bits, fine.get(name, []), fine_bits) \
                if h is not None else quantize_rtn(t.cpu(), sigmas, bits)
        elif t.is_floating_point():
            t = t.cpu()
            half = t.to(torch.float16)
            out[name] = t if (torch.isinf(half) & torch.isfinite(t)).any() else half
        else:
            out[name] = t.cpu()
    return out


def dequantize_state_dict(quantized: dict[str, QTensor | Tensor]) -> dict[str, Tensor]:
    """A state dict `load_state_dict` accepts: quantized matrices as float32, the rest as stored
    (loading casts each tensor to its parameter's dtype)."""
    return {name: dequantize(v) if isinstance(v, QTensor) else v for name, v in quantized.items()}


def quantization_summary(quantized: dict[str, QTensor | Tensor]) -> list[str]:
    """`Quantized weights:` lines: each treatment and the tensors it got, layer indices folded."""
    groups: dict[str, set[str]] = {}
    for name, v in quantized.items():
        what = f"{v.method} int{v.bits}" if isinstance(v, QTensor) else f"passthrough {str(v.dtype)[6:]}"
        folded = ".".join("N" if part.isdigit() else part for part in name.split("."))
        groups.setdefault(what, set()).add(folded)
    return [f"  {what}: {', '.join(sorted(names))}" for what, names in sorted(groups.items())]
