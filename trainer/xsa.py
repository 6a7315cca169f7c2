"""Exclusive self-attention (XSA, arXiv:2603.09078) as one Triton kernel each way on CUDA.

Each head's attention output loses its component along the token's own value vector:
u = v / max(|v|, 1e-12), out = y - (y . u) u, the query heads of a GQA group sharing their KV
head's u. Compiled from PyTorch ops this took three inductor kernels and part of a fourth per
block and micro-batch, well above the time of reading and writing each tensor once. Here a
program owns a block of (token, KV head) rows: it reads v and the group's rows of y once,
forward and backward, and recomputes u instead of storing it (docs/benchmarks.md, "Fused
exclusive self-attention").

Both directions are custom ops, `pgolf::xsa` and `pgolf::xsa_backward`, so torch.compile keeps
each as one call. Their default implementation is the same formula in PyTorch ops: it runs on
CPU, for head layouts the kernel does not cover, and wherever Triton is not installed.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from trainer.triton_support import tl, triton

EPS = 1e-12  # F.normalize's


def exclusive_self_attention(y: Tensor, v: Tensor) -> Tensor:
    """The PyTorch ops, in the inputs' dtype (what scoring runs): y (B, T, H, D) minus each head's
    component along the token's own unit value vector; v (B, T, Hkv, D), heads grouped as in GQA."""
    B, T, H, D = y.shape
    y = y.view(B, T, v.size(2), H // v.size(2), D)
    v_hat = F.normalize(v, dim=-1, eps=EPS).unsqueeze(3)  # (B, T, Hkv, 1, D)
    return (y - (y * v_hat).sum(-1, keepdim=True) * v_hat).view(B, T, H, D)


def at_least_fp32(t: Tensor) -> Tensor:
    """t in fp32, or wider if it already is (fp64 in tests)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def _groups(t: Tensor, kv_heads: int) -> Tensor:
    """(B, T, H, D) -> (B, T, Hkv, H / Hkv, D), at least fp32."""
    B, T, H, D = t.shape
    return at_least_fp32(t).reshape(B, T, kv_heads, H // kv_heads, D)


def _unit(v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(u, |v|, max(|v|, eps)) of v (B, T, Hkv, D), at least fp32; u as F.normalize gives it."""
    v = at_least_fp32(v)
    norm = v.norm(dim=-1, keepdim=True)
    clamped = norm.clamp_min(EPS)
    return v / clamped, norm, clamped


def _forward_formula(y: Tensor, v: Tensor) -> Tensor:
    return exclusive_self_attention(at_least_fp32(y), at_least_fp32(v)).to(y.dtype).contiguous()


def _backward_formula(grad_out: Tensor, y: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    g, groups = _groups(grad_out, v.size(2)), _groups(y, v.size(2))
    u, norm, clamped = _unit(v)
    s = (groups * u.unsqueeze(3)).sum(-1, keepdim=True)  # y . u per head
    c = (g * u.unsqueeze(3)).sum(-1, keepdim=True)  # grad . u per head
    grad_y = g - c * u.unsqueeze(3)
    grad_u = -(s * g + c * groups).sum(3)
    # Through u = v / max(|v|, eps): project out u where |v| > eps, else divide by eps.
    radial = torch.where(norm > EPS, (grad_u * u).sum(-1, keepdim=True), 0.0)
    grad_v = (grad_u - radial * u) / clamped
    return grad_y.reshape(y.shape).to(y.dtype), grad_v.to(v.dtype)


@torch.library.custom_op("pgolf::xsa", mutates_args=())
def fused_exclusive_self_attention(y: Tensor, v: Tensor) -> Tensor:
    """`exclusive_self_attention` computed in fp32 and rounded once to y's dtype, as the kernels
    do; returns (B, T, H, D), contiguous."""
    return _forward_formula(y, v)


@fused_exclusive_self_attention.register_fake
def _xsa_fake(y: Tensor, v: Tensor) -> Tensor:
    return y.new_empty(y.shape)


@torch.library.custom_op("pgolf::xsa_backward", mutates_args=())
def xsa_backward(grad_out: Tensor, y: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """(dL/dy, dL/dv) of the formula, in y's and v's dtypes."""
    return _backward_formula(grad_out, y, v)


@xsa_backward.register_fake
def _xsa_backward_fake(grad_out: Tensor, y: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    return y.new_empty(y.shape), v.new_empty(v.shape)


def _xsa_setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs)


def _xsa_grad(ctx, grad_out: Tensor) -> tuple[Tensor, Tensor]:
    y, v = ctx.saved_tensors
    return xsa_backward(grad_out, y, v)


fused_exclusive_self_attention.register_autograd(_xsa_grad, setup_context=_xsa_setup_context)


if triton is not None:
    @triton.jit
    def _rows(block_start, n_rows, GROUP: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr):
        """Offsets of a block of (token, KV head) rows into v (BLOCK, D) and y (BLOCK, GROUP, D)."""
        rows = block_start + tl.arange(0, BLOCK)
        d = tl.arange(0, D)
        v_offsets = rows[:, None].to(tl.int64) * D + d[None, :]
        y_offsets = ((rows[:, None, None].to(tl.int64) * GROUP + tl.arange(0, GROUP)[None, :, None]) * D
                     + d[None, None, :])
        return rows < n_rows, v_offsets, y_offsets

    @triton.jit
    def _xsa_fwd_kernel(y_ptr, v_ptr, out_ptr, n_rows, GROUP: tl.constexpr, D: tl.constexpr,
                        BLOCK: tl.constexpr):
        inside, v_offsets, y_offsets = _rows(tl.program_id(0) * BLOCK, n_rows, GROUP, D, BLOCK)
        v = tl.load(v_ptr + v_offsets, mask=inside[:, None], other=0.0).to(tl.float32)
        u = v / tl.maximum(tl.sqrt(tl.sum(v * v, axis=1)), 1e-12)[:, None]  # 1e-12: EPS
        y = tl.load(y_ptr + y_offsets, mask=inside[:, None, None], other=0.0).to(tl.float32)
        s = tl.sum(y * u[:, None, :], axis=2)
        out = y - s[:, :, None] * u[:, None, :]
        tl.store(out_ptr + y_offsets, out.to(out_ptr.dtype.element_ty), mask=inside[:, None, None])

    @triton.jit
    def _xsa_bwd_kernel(grad_ptr, y_ptr, v_ptr, grad_y_ptr, grad_v_ptr, n_rows, GROUP: tl.constexpr,
                        D: tl.constexpr, BLOCK: tl.constexpr):
        inside, v_offsets, y_offsets = _rows(tl.program_id(0) * BLOCK, n_rows, GROUP, D, BLOCK)
        v = tl.load(v_ptr + v_offsets, mask=inside[:, None], other=0.0).to(tl.float32)
        norm = tl.sqrt(tl.sum(v * v, axis=1))
        clamped = tl.maximum(norm, 1e-12)
        u = v / clamped[:, None]
        y = tl.load(y_ptr + y_offsets, mask=inside[:, None, None], other=0.0).to(tl.float32)
        g = tl.load(grad_ptr + y_offsets, mask=inside[:, None, None], other=0.0).to(tl.float32)
        s = tl.sum(y * u[:, None, :], axis=2)  # (BLOCK, GROUP): y . u per head
        c = tl.sum(g * u[:, None, :], axis=2)  # grad . u per head
        grad_y = g - c[:, :, None] * u[:, None, :]
        grad_u = -tl.sum(s[:, :, None] * g + c[:, :, None] * y, axis=1)  # (BLOCK, D)
        # Through u = v / max(|v|, eps): project out u where |v| > eps, else divide by eps.
        radial = tl.where(norm > 1e-12, tl.sum(grad_u * u, axis=1), 0.0)
        grad_v = (grad_u - radial[:, None] * u) / clamped[:, None]
        tl.store(grad_y_ptr + y_offsets, grad_y.to(grad_y_ptr.dtype.element_ty), mask=inside[:, None, None])
        tl.store(grad_v_ptr + v_offsets, grad_v.to(grad_v_ptr.dtype.element_ty), mask=inside[:, None])

    _BLOCK = 64  # rows per program: 64 x 2 x 64 values of y at the record's layout

    def _covered(y: Tensor, v: Tensor) -> bool:
        """Head width and group size are powers of two (Triton's block shapes)."""
        group, d = y.size(2) // v.size(2), y.size(3)
        return group & (group - 1) == 0 and d & (d - 1) == 0 and d >= 16

    def _launch(kernel, n_rows: int, device: torch.device, *args, group: int, d: int) -> None:
        with torch.cuda.device(device):
            kernel[(triton.cdiv(n_rows, _BLOCK),)](*args, n_rows, GROUP=group, D=d, BLOCK=_BLOCK,
                                                   num_warps=4)

    @fused_exclusive_self_attention.register_kernel("cuda")
    def _xsa_cuda(y: Tensor, v: Tensor) -> Tensor:
        if not _covered(y, v):
            return _forward_formula(y, v)
        y, v = y.contiguous(), v.contiguous()
        out = torch.empty_like(y)
        n_rows = v.numel() // v.size(3)
        _launch(_xsa_fwd_kernel, n_rows, y.device, y, v, out, group=y.size(2) // v.size(2), d=y.size(3))
        return out

    @xsa_backward.register_kernel("cuda")
    def _xsa_backward_cuda(grad_out: Tensor, y: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        if not _covered(y, v):
            return _backward_formula(grad_out, y, v)
        grad_out, y, v = grad_out.contiguous(), y.contiguous(), v.contiguous()
        grad_y, grad_v = torch.empty_like(y), torch.empty_like(v)
        n_rows = v.numel() // v.size(3)
        _launch(_xsa_bwd_kernel, n_rows, y.device, grad_out, y, v, grad_y, grad_v,
                group=y.size(2) // v.size(2), d=y.size(3))
        return grad_y, grad_v
