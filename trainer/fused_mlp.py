"""The squared-LeakyReLU MLP with its activation fused into the matmuls, one Triton kernel each way.

y = leaky_relu(x @ W_fc^T, slope)^2 @ W_proj^T. Compiled from PyTorch ops, each matmul runs in
cuBLAS and the activation in a separate kernel: forward it reads the (tokens, 4 * dim) hidden
layer and writes its activation, backward it reads the upstream gradient and the hidden layer
and writes the hidden layer's gradient, about 1.2 ms per block and micro-batch pass pair on an
H200 at the record's shapes. Here the activation is the epilogue of the matmul that produces
its input: forward the fc matmul writes both the hidden layer and its activation from the tile
it holds; backward the matmul dy @ W_proj multiplies by the activation's derivative before it
stores, so the hidden layer's gradient is written once and the upstream one never.

The whole MLP is the custom op `pgolf::leaky_relu2_mlp`, with the backward kernel its own op
`pgolf::leaky_relu2_mlp_backward`; the remaining matmuls (the projection, the weight gradients,
the input gradient) are PyTorch's. Each op's default implementation is the same formula in
PyTorch ops: it runs on CPU, for fp32 inputs, and wherever Triton is not installed.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.flop_counter import register_flop_formula

from trainer.triton_support import tl, triton


def leaky_relu2_mlp(x: Tensor, w_fc: Tensor, w_proj: Tensor, slope: float) -> Tensor:
    """leaky_relu(x @ w_fc^T, slope)^2 @ w_proj^T for x (..., dim), in x's dtype."""
    y, _, _ = leaky_relu2_mlp_rows(x.reshape(-1, x.size(-1)), w_fc, w_proj, slope)
    return y.view(*x.shape[:-1], w_proj.size(0))


def _wide(t: Tensor) -> Tensor:
    """t in fp32, or wider if it already is (fp64 in tests)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def _activation(h: Tensor, slope: float) -> Tensor:
    """leaky_relu(h)^2 computed in fp32 from h, stored in h's dtype (as inductor's fused kernel)."""
    return F.leaky_relu(_wide(h), slope).square().to(h.dtype)


def _mlp_formula(x: Tensor, w_fc: Tensor, w_proj: Tensor, slope: float) -> tuple[Tensor, Tensor, Tensor]:
    h = x @ w_fc.T
    a = _activation(h, slope)
    return a @ w_proj.T, h, a


def _backward_formula(grad_y: Tensor, w_proj: Tensor, h: Tensor, slope: float) -> Tensor:
    grad_a = _wide(grad_y @ w_proj)  # rounded to the inputs' dtype first, as a matmul's output
    h = _wide(h)
    return (grad_a * 2 * F.leaky_relu(h, slope) * torch.where(h > 0, 1.0, slope)).to(grad_y.dtype)


@torch.library.custom_op("pgolf::leaky_relu2_mlp", mutates_args=())
def leaky_relu2_mlp_rows(x: Tensor, w_fc: Tensor, w_proj: Tensor,
                         slope: float) -> tuple[Tensor, Tensor, Tensor]:
    """(y, h, a) for x (rows, dim): h = x @ w_fc^T, a = leaky_relu(h)^2, y = a @ w_proj^T; h and a
    are kept for the backward."""
    return _mlp_formula(x, w_fc, w_proj, slope)


@leaky_relu2_mlp_rows.register_fake
def _leaky_relu2_mlp_rows_fake(x: Tensor, w_fc: Tensor, w_proj: Tensor,
                               slope: float) -> tuple[Tensor, Tensor, Tensor]:
    hidden = x.new_empty(x.size(0), w_fc.size(0))
    return x.new_empty(x.size(0), w_proj.size(0)), hidden, torch.empty_like(hidden)


@torch.library.custom_op("pgolf::leaky_relu2_mlp_backward", mutates_args=())
def leaky_relu2_mlp_backward(grad_y: Tensor, w_proj: Tensor, h: Tensor, slope: float) -> Tensor:
    """dL/dh = (grad_y @ w_proj) * 2 * leaky_relu(h) * leaky_relu'(h), in h's dtype."""
    return _backward_formula(grad_y, w_proj, h, slope)


@leaky_relu2_mlp_backward.register_fake
def _leaky_relu2_mlp_backward_fake(grad_y: Tensor, w_proj: Tensor, h: Tensor, slope: float) -> Tensor:
    return torch.empty_like(h)


def _mlp_setup_context(ctx, inputs, output) -> None:
    x, w_fc, w_proj, slope = inputs
    _, h, a = output
    ctx.save_for_backward(x, w_fc, w_proj, h, a)
    ctx.mark_non_differentiable(h, a)  # kept for the backward, not used downstream
    ctx.slope = slope


def _mlp_grad(ctx, grad_y: Tensor, grad_h: Tensor | None, grad_a: Tensor | None):
    x, w_fc, w_proj, h, a = ctx.saved_tensors
    grad_y = grad_y.contiguous()
    grad_h = leaky_relu2_mlp_backward(grad_y, w_proj, h, ctx.slope)
    return grad_h @ w_fc, grad_h.T @ x, grad_y.T @ a, None


leaky_relu2_mlp_rows.register_autograd(_mlp_grad, setup_context=_mlp_setup_context)


# The ops' matmuls, 2 FLOPs per multiply-add, so that FLOP counters see inside them.
@register_flop_formula(torch.ops.pgolf.leaky_relu2_mlp)
def _mlp_flops(x_shape, w_fc_shape, w_proj_shape, *args, **kwargs) -> int:
    return 2 * x_shape[0] * w_fc_shape[0] * (w_fc_shape[1] + w_proj_shape[0])


@register_flop_formula(torch.ops.pgolf.leaky_relu2_mlp_backward)
def _mlp_backward_flops(grad_y_shape, w_proj_shape, *args, **kwargs) -> int:
    return 2 * grad_y_shape[0] * w_proj_shape[0] * w_proj_shape[1]


if triton is not None:
    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def _matmul_activation_kernel(a_desc, b_desc, h_desc, out_desc, M, N, K, slope,
                                  BACKWARD: tl.constexpr, BLOCK_M: tl.constexpr,
                                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                  GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, BF16: tl.constexpr):
        """C = A @ B^T for A (M, K) and B (N, K), both row-major, then the epilogue: forward,
        h = C and out = leaky_relu(C)^2; backward, out = C * 2 * leaky_relu(h) * leaky_relu'(h)
        with h read. C is rounded to the inputs' dtype first, as a matmul's output would be.

        Persistent: one program per multiprocessor walks the output tiles, so the epilogue's
        stores of one tile overlap the next tile's loads (the epilogue writes twice the bytes a
        plain matmul does, and with K = 512 the main loop is short). Tiles move through the
        tensor-memory accelerator, which also clips the edges."""
        num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
        group = GROUP_M * num_n
        for tile in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS, flatten=True):
            # Grouped order: GROUP_M row blocks share each column block of B while it is in L2.
            first_m = (tile // group) * GROUP_M
            rows_in_group = min(num_m - first_m, GROUP_M)
            off_m = (first_m + (tile % group) % rows_in_group) * BLOCK_M
            off_n = ((tile % group) // rows_in_group) * BLOCK_N
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(0, K, BLOCK_K):
                acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([off_n, k]).T, acc)
            dtype = tl.bfloat16 if BF16 else tl.float16
            c = acc.to(dtype).to(tl.float32)
            if BACKWARD:
                h = h_desc.load([off_m, off_n]).to(tl.float32)
                positive = h > 0
                grad = c * 2.0 * tl.where(positive, h, h * slope) * tl.where(positive, 1.0, slope)
                out_desc.store([off_m, off_n], grad.to(dtype))
            else:
                leaky = tl.where(c > 0, c, c * slope)
                h_desc.store([off_m, off_n], c.to(dtype))
                out_desc.store([off_m, off_n], (leaky * leaky).to(dtype))

    # Chosen on an H200 at the record's shapes (98,304 x 512 x 2048 both ways) by
    # benchmarks/fused_mlp_bench.py; docs/benchmarks.md has the candidates' times.
    _CONFIG = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4)

    def _matmul_activation(a: Tensor, b: Tensor, h: Tensor, out: Tensor, slope: float,
                           backward: bool) -> None:
        (M, K), N = a.shape, b.size(0)
        bm, bn, bk = _CONFIG["BLOCK_M"], _CONFIG["BLOCK_N"], _CONFIG["BLOCK_K"]
        num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        grid = (min(num_sms, triton.cdiv(M, bm) * triton.cdiv(N, bn)),)
        descriptors = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
                       TensorDescriptor.from_tensor(h, [bm, bn]), TensorDescriptor.from_tensor(out, [bm, bn]))
        with torch.cuda.device(a.device):
            _matmul_activation_kernel[grid](*descriptors, M, N, K, slope, BACKWARD=backward,
                                            NUM_SMS=num_sms, BF16=a.dtype == torch.bfloat16, **_CONFIG)

    def _fusable(*tensors: Tensor) -> bool:
        """bf16 or fp16, one dtype, and rows the tensor-memory accelerator can address (16-byte
        aligned), on a GPU that has one (Hopper or newer)."""
        major, _ = torch.cuda.get_device_capability(tensors[0].device)
        return major >= 9 and all(
            t.dtype in (torch.bfloat16, torch.float16) and t.dtype == tensors[0].dtype
            and t.size(-1) * t.element_size() % 16 == 0 for t in tensors)

    @leaky_relu2_mlp_rows.register_kernel("cuda")
    def _leaky_relu2_mlp_rows_cuda(x: Tensor, w_fc: Tensor, w_proj: Tensor,
                                   slope: float) -> tuple[Tensor, Tensor, Tensor]:
        if not _fusable(x, w_fc, w_proj):
            return _mlp_formula(x, w_fc, w_proj, slope)
        x, w_fc = x.contiguous(), w_fc.contiguous()
        h = x.new_empty(x.size(0), w_fc.size(0))
        a = torch.empty_like(h)
        _matmul_activation(x, w_fc, h, a, slope, backward=False)
        return a @ w_proj.T, h, a

    @leaky_relu2_mlp_backward.register_kernel("cuda")
    def _leaky_relu2_mlp_backward_cuda(grad_y: Tensor, w_proj: Tensor, h: Tensor,
                                       slope: float) -> Tensor:
        if not _fusable(grad_y, w_proj, h):
            return _backward_formula(grad_y, w_proj, h, slope)
        grad_h = torch.empty_like(h)
        # B must be (N, K) row-major: W_proj^T, 2048 x 512 at the record's shapes (2 MB, ~1 us).
        _matmul_activation(grad_y.contiguous(), w_proj.T.contiguous(), h.contiguous(), grad_h, slope,
                           backward=True)
        return grad_h
