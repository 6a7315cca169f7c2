"""Cross-entropy of softcapped logits, fused into one Triton kernel each way on CUDA.

The model uses softcapped logits as in the records (Gemma 2 style tanh softcap):
s = softcap * tanh(z / softcap), then cross-entropy on s in fp32. Compiled from PyTorch ops, the
head's loss took several times what reading the logits once costs (docs/benchmarks.md, "Banked
Muon and the fused softcapped cross-entropy"). Here one program per row
reads its row once forward (online max and sum over column blocks, keeping the row's logsumexp)
and once backward (recomputing tanh from z), and writes the gradient in the logits' dtype.

Both directions are custom ops, `pgolf::softcap_ce` and `pgolf::softcap_ce_backward`, so
torch.compile(fullgraph=True) keeps each as one opaque call. Their default implementation is the
same formula in PyTorch ops: it runs on CPU, and wherever Triton is not available
(trainer/triton_support.py).
"""

from __future__ import annotations

import torch
from torch import Tensor

from trainer.triton_support import tl, triton


def softcapped_cross_entropy(logits: Tensor, targets: Tensor, softcap: float) -> Tensor:
    """Mean over rows of logsumexp(s) - s[target], s = softcap * tanh(logits / softcap) in fp32.

    logits (N, V) before the softcap, bf16 or fp32; targets (N,) int64 in [0, V). Returns an fp32
    scalar; the gradient w.r.t. logits has their dtype.
    """
    loss, _ = softcap_ce_rows(logits, targets, softcap)
    return loss.mean()  # outside the op, so its backward gets a per-row upstream gradient


def _tanh_scaled(logits: Tensor, softcap: float) -> Tensor:
    """tanh(z / softcap) in fp32, contiguous like the outputs the fake implementations promise."""
    return torch.tanh(logits.contiguous().float() / softcap)


@torch.library.custom_op("pgolf::softcap_ce", mutates_args=())
def softcap_ce_rows(logits: Tensor, targets: Tensor, softcap: float) -> tuple[Tensor, Tensor]:
    """(loss, logsumexp) per row, both fp32; the logsumexp is kept for the backward."""
    s = softcap * _tanh_scaled(logits, softcap)
    lse = torch.logsumexp(s, dim=1)
    return lse - s.gather(1, targets[:, None]).squeeze(1), lse


@softcap_ce_rows.register_fake
def _softcap_ce_rows_fake(logits: Tensor, targets: Tensor, softcap: float) -> tuple[Tensor, Tensor]:
    loss = logits.new_empty(logits.shape[0], dtype=torch.float32)
    return loss, torch.empty_like(loss)


@torch.library.custom_op("pgolf::softcap_ce_backward", mutates_args=())
def softcap_ce_rows_backward(grad_loss: Tensor, logits: Tensor, targets: Tensor, lse: Tensor,
                             softcap: float) -> Tensor:
    """d(loss rows)/d(logits) times grad_loss: (softmax(s) - onehot) * (1 - tanh^2), logits' dtype."""
    t = _tanh_scaled(logits, softcap)
    dloss_ds = torch.exp(softcap * t - lse[:, None])
    dloss_ds[torch.arange(len(targets), device=targets.device), targets] -= 1.0
    return (grad_loss[:, None] * dloss_ds * (1.0 - t * t)).to(logits.dtype)


@softcap_ce_rows_backward.register_fake
def _softcap_ce_rows_backward_fake(grad_loss: Tensor, logits: Tensor, targets: Tensor, lse: Tensor,
                                   softcap: float) -> Tensor:
    return logits.new_empty(logits.shape)


def _softcap_ce_setup_context(ctx, inputs, output) -> None:
    logits, targets, softcap = inputs
    ctx.save_for_backward(logits, targets, output[1])
    ctx.mark_non_differentiable(output[1])  # the logsumexp is only a saved statistic
    ctx.softcap = softcap


def _softcap_ce_grad(ctx, grad_loss: Tensor, grad_lse: Tensor | None):
    logits, targets, lse = ctx.saved_tensors
    return softcap_ce_rows_backward(grad_loss, logits, targets, lse, ctx.softcap), None, None


softcap_ce_rows.register_autograd(_softcap_ce_grad, setup_context=_softcap_ce_setup_context)


if triton is not None:
    @triton.jit
    def _tanh(u):
        """tanh from one exp and one division. libdevice's tanh is a longer instruction sequence
        that made both kernels compute-bound (docs/benchmarks.md, "A cheaper tanh in the
        softcapped cross-entropy"). The result
        differs from libdevice's by about fp32 rounding, and saturates to +-1 where exp
        overflows or vanishes."""
        return 1.0 - 2.0 / (tl.exp(2.0 * u) + 1.0)

    @triton.jit
    def _softcap_ce_fwd_kernel(logits_ptr, targets_ptr, loss_ptr, lse_ptr, n_cols, softcap, inv_softcap,
                               BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)  # row * n_cols passes 2**31 for large vocabularies
        row_ptr = logits_ptr + row * n_cols
        # Online logsumexp with a scalar running max: one extra exp per block, not per element.
        running_max = float("-inf")
        running_sum = 0.0
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            z = tl.load(row_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            s = tl.where(cols < n_cols, softcap * _tanh(z * inv_softcap), float("-inf"))
            block_max = tl.maximum(running_max, tl.max(s, axis=0))
            running_sum = (running_sum * tl.exp(running_max - block_max)
                           + tl.sum(tl.exp(s - block_max), axis=0))
            running_max = block_max
        lse = running_max + tl.log(running_sum)
        z_target = tl.load(row_ptr + tl.load(targets_ptr + row)).to(tl.float32)
        tl.store(lse_ptr + row, lse)
        tl.store(loss_ptr + row, lse - softcap * _tanh(z_target * inv_softcap))

    @triton.jit
    def _softcap_ce_bwd_kernel(grad_loss_ptr, logits_ptr, targets_ptr, lse_ptr, grad_ptr, n_cols, softcap,
                               inv_softcap, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        grad_loss = tl.load(grad_loss_ptr + row)
        lse = tl.load(lse_ptr + row)
        target = tl.load(targets_ptr + row)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < n_cols
            z = tl.load(logits_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
            t = _tanh(z * inv_softcap)
            dloss_ds = tl.exp(softcap * t - lse) - tl.where(cols == target, 1.0, 0.0)
            grad = grad_loss * dloss_ds * (1.0 - t * t)
            tl.store(grad_ptr + row * n_cols + cols, grad.to(grad_ptr.dtype.element_ty), mask=mask)

    def _softcap_ce_launch_config(n_cols: int) -> tuple[int, int]:
        """(BLOCK, num_warps). A bf16 row of the 8192-token vocabulary (16 KB) fits one block of
        8192, so the loop runs once and the running sum is never rescaled; 8 warps give each
        thread 32 values (four 16-byte loads of bf16), which measured faster than 16 warps with
        16 values each (docs/benchmarks.md, "A cheaper tanh in the softcapped cross-entropy").
        Larger vocabularies loop over
        blocks of 8192; smaller ones keep 32 values per thread."""
        block = min(triton.next_power_of_2(n_cols), 8192)
        return block, min(8, max(1, block // 1024))

    @softcap_ce_rows.register_kernel("cuda")
    def _softcap_ce_rows_cuda(logits: Tensor, targets: Tensor, softcap: float) -> tuple[Tensor, Tensor]:
        logits, targets = logits.contiguous(), targets.contiguous()
        n_rows, n_cols = logits.shape
        loss = logits.new_empty(n_rows, dtype=torch.float32)
        lse = torch.empty_like(loss)
        block, num_warps = _softcap_ce_launch_config(n_cols)
        with torch.cuda.device(logits.device):
            _softcap_ce_fwd_kernel[(n_rows,)](logits, targets, loss, lse, n_cols, softcap, 1.0 / softcap,
                                              BLOCK=block, num_warps=num_warps)
        return loss, lse

    @softcap_ce_rows_backward.register_kernel("cuda")
    def _softcap_ce_rows_backward_cuda(grad_loss: Tensor, logits: Tensor, targets: Tensor, lse: Tensor,
                                       softcap: float) -> Tensor:
        # The upstream gradient of a mean is a stride-0 broadcast: materialize it.
        grad_loss, logits, targets = grad_loss.contiguous(), logits.contiguous(), targets.contiguous()
        grad = torch.empty_like(logits)
        n_rows, n_cols = logits.shape
        block, num_warps = _softcap_ce_launch_config(n_cols)
        with torch.cuda.device(logits.device):
            _softcap_ce_bwd_kernel[(n_rows,)](grad_loss, logits, targets, lse, grad, n_cols, softcap,
                                              1.0 / softcap, BLOCK=block, num_warps=num_warps)
        return grad
