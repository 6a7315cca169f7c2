"""The queries' and keys' RMSNorm, partial RoPE and query gain as one Triton kernel each way on CUDA.

Per head vector of q (B, T, H, D) and k (B, T, Hkv, D): out = rope(x / rms(x)), times the head's
learned gain for q. The keys can come out repeated for each query head of their group, as
training's FA4 attention takes them (trainer/fa4.py says why); the backward then sums the copies'
gradients. Compiled from PyTorch ops this took ten inductor kernels per block and micro-batch
(docs/benchmarks.md, "The queries' and keys' norm, rotation and gain as one kernel each way"):
the query gain's gradient, a sum over every token of the head, was a product stored in fp32 and
summed by a kernel of its own.
Here a program owns a block of head vectors: it reads x once forward and x and the gradient once
backward, recomputes the norm instead of storing it, and leaves one fp32 dot product per vector
for the gain's gradient (one value per head vector, where the compiled ops stored one per element).

Both directions are custom ops, `pgolf::qk_norm_rope` and `pgolf::qk_norm_rope_backward`, so
torch.compile keeps each as one call. Their default implementation is the same formula in
PyTorch ops, in fp32 and rounded once: it runs on CPU, for head widths the kernel does not cover,
and wherever Triton is not installed.
"""

from __future__ import annotations

import torch
from torch import Tensor

from trainer.triton_support import tl, triton
from trainer.xsa import at_least_fp32


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate the first 2 * cos.size(-1) dims of x (B, T, H, D) as half-split pairs."""
    rd = 2 * cos.size(-1)
    x1, x2 = x[..., : rd // 2], x[..., rd // 2 : rd]
    rotated = torch.cat((x1 * cos + x2 * sin, x2 * cos - x1 * sin), dim=-1)
    return torch.cat((rotated, x[..., rd:]), dim=-1) if rd < x.size(-1) else rotated


def _normed(x: Tensor) -> tuple[Tensor, Tensor]:
    """(x / rms(x), 1 / rms(x)) at least in fp32, with F.rms_norm's eps for that dtype."""
    x = at_least_fp32(x)
    inv_rms = torch.rsqrt(x.square().mean(-1, keepdim=True) + torch.finfo(x.dtype).eps)
    return x * inv_rms, inv_rms


def _rotated(x: Tensor, cos: Tensor, sin: Tensor, gain: Tensor | None) -> Tensor:
    out = apply_rope(_normed(x)[0], at_least_fp32(cos), at_least_fp32(sin))
    return out if gain is None else out * at_least_fp32(gain)[:, None]


def _rotated_backward(grad: Tensor, x: Tensor, cos: Tensor, sin: Tensor,
                      gain: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """(dL/dx, dL/dgain or None) of _rotated."""
    n, inv_rms = _normed(x)
    cos, sin, grad = at_least_fp32(cos), at_least_fp32(sin), at_least_fp32(grad)
    grad_gain = None
    if gain is not None:
        grad_gain = (grad * apply_rope(n, cos, sin)).sum((0, 1, 3)).to(gain.dtype)
        grad = grad * at_least_fp32(gain)[:, None]
    grad_n = apply_rope(grad, cos, -sin)  # the rotation's transpose is the rotation backwards
    grad_x = inv_rms * (grad_n - n * (grad_n * n).mean(-1, keepdim=True))
    return grad_x.to(x.dtype), grad_gain


def _qk_formula(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, gain: Tensor,
                k_repeats: int) -> tuple[Tensor, Tensor]:
    k_out = _rotated(k, cos, sin, None).to(k.dtype).repeat_interleave(k_repeats, dim=2)
    return _rotated(q, cos, sin, gain).to(q.dtype).contiguous(), k_out.contiguous()


def _qk_backward_formula(grad_q: Tensor, grad_k: Tensor, q: Tensor, k: Tensor, cos: Tensor,
                         sin: Tensor, gain: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    grad_q, grad_gain = _rotated_backward(grad_q, q, cos, sin, gain)
    grad_k = at_least_fp32(grad_k).unflatten(2, (k.size(2), -1)).sum(3)  # the repeats' sum
    return grad_q, _rotated_backward(grad_k, k, cos, sin, None)[0], grad_gain


@torch.library.custom_op("pgolf::qk_norm_rope", mutates_args=())
def qk_norm_rope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, gain: Tensor,
                 k_repeats: int) -> tuple[Tensor, Tensor]:
    """(rope(rms_norm(q)) * gain per head, rope(rms_norm(k)) with each head `k_repeats` times in a
    row), each computed in fp32 and rounded once to its input's dtype; q (B, T, H, D), k (B, T,
    Hkv, D), cos and sin (1, T, 1, rd / 2) as Rotary gives them, gain (H,). Returns contiguous
    tensors, the keys (B, T, Hkv * k_repeats, D)."""
    return _qk_formula(q, k, cos, sin, gain, k_repeats)


def _keys_out(k: Tensor, k_repeats: int) -> Tensor:
    """An empty tensor for the repeated keys, (B, T, Hkv * k_repeats, D)."""
    B, T, kv_heads, D = k.shape
    return k.new_empty(B, T, kv_heads * k_repeats, D)


@qk_norm_rope.register_fake
def _qk_norm_rope_fake(q, k, cos, sin, gain, k_repeats):
    return q.new_empty(q.shape), _keys_out(k, k_repeats)


@torch.library.custom_op("pgolf::qk_norm_rope_backward", mutates_args=())
def qk_norm_rope_backward(grad_q: Tensor, grad_k: Tensor, q: Tensor, k: Tensor, cos: Tensor,
                          sin: Tensor, gain: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(dL/dq, dL/dk, dL/dgain) of qk_norm_rope, in q's, k's and gain's dtypes; grad_k has the
    repeated keys' heads."""
    return _qk_backward_formula(grad_q, grad_k, q, k, cos, sin, gain)


@qk_norm_rope_backward.register_fake
def _qk_norm_rope_backward_fake(grad_q, grad_k, q, k, cos, sin, gain):
    return q.new_empty(q.shape), k.new_empty(k.shape), gain.new_empty(gain.shape)


def _qk_setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs[:5])


def _qk_grad(ctx, grad_q: Tensor, grad_k: Tensor):
    q, k, cos, sin, gain = ctx.saved_tensors
    dq, dk, dgain = qk_norm_rope_backward(grad_q, grad_k, q, k, cos, sin, gain)
    return dq, dk, None, None, dgain, None


qk_norm_rope.register_autograd(_qk_grad, setup_context=_qk_setup_context)


if triton is not None:
    @triton.jit
    def _qk_tile(x_ptr, cos_ptr, sin_ptr, block_start, n_rows, T, H, D: tl.constexpr,
                 HALF: tl.constexpr, BLOCK: tl.constexpr):
        """A block of head vectors: their offsets, which are inside, x / rms(x) (fp32), the same at
        each column's rotation partner, 1 / rms(x), and each column's cos, sin and sign."""
        rows = block_start + tl.arange(0, BLOCK)
        inside = rows < n_rows
        d = tl.arange(0, D)
        first = d < HALF
        rotary = d < 2 * HALF
        partner = tl.where(first, d + HALF, tl.where(rotary, d - HALF, d))
        base = rows[:, None].to(tl.int64) * D
        offsets, partner_offsets = base + d[None, :], base + partner[None, :]
        x = tl.load(x_ptr + offsets, mask=inside[:, None], other=0.0).to(tl.float32)
        x_partner = tl.load(x_ptr + partner_offsets, mask=inside[:, None], other=0.0).to(tl.float32)
        # fp32's eps: F.rms_norm's for bf16 inputs, which it computes in fp32.
        inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / D + 1.1920928955078125e-07)
        # The table entry of each column: its position's, at its pair's index; 1 and 0 past rd.
        table = ((rows // H) % T)[:, None] * HALF + tl.where(first, d, d - HALF)[None, :]
        in_table = inside[:, None] & rotary[None, :]
        cos = tl.load(cos_ptr + table, mask=in_table, other=1.0).to(tl.float32)
        sin = tl.load(sin_ptr + table, mask=in_table, other=0.0).to(tl.float32)
        sign = tl.where(first, 1.0, -1.0)[None, :]
        return (offsets, inside, x * inv_rms[:, None], x_partner * inv_rms[:, None], inv_rms,
                cos, sin, sign, partner_offsets)

    @triton.jit
    def _copy_shift(rows, j, REPEATS: tl.constexpr, D: tl.constexpr):
        """Where copy j of each row's vector lies, from where the row's vector does: rows r of
        the input are rows r * REPEATS + j of the repeated tensor (a group's heads adjacent)."""
        return (rows[:, None].to(tl.int64) * (REPEATS - 1) + j) * D

    @triton.jit
    def _qk_fwd_kernel(x_ptr, cos_ptr, sin_ptr, gain_ptr, out_ptr, n_rows, T, H, D: tl.constexpr,
                       HALF: tl.constexpr, HAS_GAIN: tl.constexpr, REPEATS: tl.constexpr,
                       BLOCK: tl.constexpr):
        block_start = tl.program_id(0) * BLOCK
        offsets, inside, n, n_partner, _, cos, sin, sign, _ = _qk_tile(
            x_ptr, cos_ptr, sin_ptr, block_start, n_rows, T, H, D, HALF, BLOCK)
        rows = block_start + tl.arange(0, BLOCK)
        out = n * cos + sign * n_partner * sin
        if HAS_GAIN:
            out = out * tl.load(gain_ptr + rows % H, mask=inside, other=0.0).to(tl.float32)[:, None]
        out = out.to(out_ptr.dtype.element_ty)
        for j in tl.static_range(REPEATS):
            tl.store(out_ptr + offsets + _copy_shift(rows, j, REPEATS, D), out, mask=inside[:, None])

    @triton.jit
    def _qk_bwd_kernel(grad_ptr, x_ptr, cos_ptr, sin_ptr, gain_ptr, grad_x_ptr, dots_ptr, n_rows,
                       T, H, D: tl.constexpr, HALF: tl.constexpr, HAS_GAIN: tl.constexpr,
                       REPEATS: tl.constexpr, BLOCK: tl.constexpr):
        block_start = tl.program_id(0) * BLOCK
        offsets, inside, n, n_partner, inv_rms, cos, sin, sign, partner_offsets = _qk_tile(
            x_ptr, cos_ptr, sin_ptr, block_start, n_rows, T, H, D, HALF, BLOCK)
        rows = block_start + tl.arange(0, BLOCK)
        grad = tl.zeros((BLOCK, D), dtype=tl.float32)  # summed over the row's copies
        grad_partner = tl.zeros((BLOCK, D), dtype=tl.float32)
        for j in tl.static_range(REPEATS):
            copy = grad_ptr + _copy_shift(rows, j, REPEATS, D)
            grad += tl.load(copy + offsets, mask=inside[:, None], other=0.0).to(tl.float32)
            grad_partner += tl.load(copy + partner_offsets, mask=inside[:, None],
                                    other=0.0).to(tl.float32)
        if HAS_GAIN:
            rotated = n * cos + sign * n_partner * sin
            tl.store(dots_ptr + rows, tl.sum(grad * rotated, axis=1), mask=inside)
            g = tl.load(gain_ptr + rows % H, mask=inside, other=0.0).to(tl.float32)[:, None]
            grad, grad_partner = grad * g, grad_partner * g
        grad_n = grad * cos - sign * grad_partner * sin  # rotated backwards
        grad_x = inv_rms[:, None] * (grad_n - n * (tl.sum(grad_n * n, axis=1) / D)[:, None])
        tl.store(grad_x_ptr + offsets, grad_x.to(grad_x_ptr.dtype.element_ty), mask=inside[:, None])

    # Head vectors per program, forward and backward: the backward holds twice the tensors, and
    # at 64 rows its programs ran well below the bandwidth 32 reach (docs/benchmarks.md, "The
    # residual read in the GEMM's epilogue, and the q/k backward's block size").
    _QK_FWD_BLOCK, _QK_BWD_BLOCK = 64, 32

    def _qk_covered(q: Tensor, cos: Tensor) -> bool:
        """Head width a power of two (Triton's block shapes) and the tables (1, T, 1, rd / 2)."""
        d = q.size(3)
        return d & (d - 1) == 0 and d >= 16 and cos.shape == (1, q.size(1), 1, cos.size(3))

    def _qk_launch(kernel, block: int, x: Tensor, cos: Tensor, *args, has_gain: bool,
                   repeats: int = 1) -> None:
        B, T, H, D = x.shape
        n_rows = B * T * H
        with torch.cuda.device(x.device):
            kernel[(triton.cdiv(n_rows, block),)](*args, n_rows, T, H, D=D, HALF=cos.size(3),
                                                  HAS_GAIN=has_gain, REPEATS=repeats, BLOCK=block,
                                                  num_warps=4)

    def _qk_tables(cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
        """(1, T, 1, rd / 2) -> (T, rd / 2), contiguous."""
        return tuple(t.reshape(t.size(1), t.size(3)).contiguous() for t in (cos, sin))

    @qk_norm_rope.register_kernel("cuda")
    def _qk_norm_rope_cuda(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, gain: Tensor,
                           k_repeats: int) -> tuple[Tensor, Tensor]:
        if not _qk_covered(q, cos):
            return _qk_formula(q, k, cos, sin, gain, k_repeats)
        (q, k), (c, s) = (q.contiguous(), k.contiguous()), _qk_tables(cos, sin)
        out_q, out_k = torch.empty_like(q), _keys_out(k, k_repeats)
        _qk_launch(_qk_fwd_kernel, _QK_FWD_BLOCK, q, cos, q, c, s, gain, out_q, has_gain=True)
        _qk_launch(_qk_fwd_kernel, _QK_FWD_BLOCK, k, cos, k, c, s, gain, out_k, has_gain=False,
                   repeats=k_repeats)
        return out_q, out_k

    @qk_norm_rope_backward.register_kernel("cuda")
    def _qk_norm_rope_backward_cuda(grad_q: Tensor, grad_k: Tensor, q: Tensor, k: Tensor,
                                    cos: Tensor, sin: Tensor, gain: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        if not _qk_covered(q, cos):
            return _qk_backward_formula(grad_q, grad_k, q, k, cos, sin, gain)
        grad_q, grad_k, q, k = (t.contiguous() for t in (grad_q, grad_k, q, k))
        c, s = _qk_tables(cos, sin)
        dq, dk = torch.empty_like(q), torch.empty_like(k)
        dots = torch.empty(q.numel() // q.size(3), device=q.device, dtype=torch.float32)
        _qk_launch(_qk_bwd_kernel, _QK_BWD_BLOCK, q, cos, grad_q, q, c, s, gain, dq, dots, has_gain=True)
        _qk_launch(_qk_bwd_kernel, _QK_BWD_BLOCK, k, cos, grad_k, k, c, s, gain, dk, dots,
                   has_gain=False, repeats=grad_k.size(2) // k.size(2))
        return dq, dk, dots.view(-1, q.size(2)).sum(0).to(gain.dtype)
