"""residual + x @ W^T with the residual read in the GEMM's epilogue (quack, CuTe DSL, Hopper).

PyTorch's CUDA addmm copies the residual into its output before the GEMM accumulates onto it: a
read and a write of the (tokens, dim) stream more than the sum needs, twice per layer and
micro-batch in training (the attention's and the MLP's projections; `Memcpy DtoD`, 8.7 ms a step
at the record's shapes on an H200). quack's gemm_add reads the residual in its epilogue instead.
The op is `pgolf::residual_gemm`, one call in the compiled graph; its backward is addmm's. On
CUDA it needs quack, and the model runs it only where the quack MLP runs (trainer/model.py); its
default implementation, on CPU, is addmm.
"""

from __future__ import annotations

import torch
from torch import Tensor


@torch.library.custom_op("pgolf::residual_gemm", mutates_args=())
def residual_gemm(residual: Tensor, x: Tensor, weight: Tensor) -> Tensor:
    """residual (M, N) + x (M, K) @ weight (N, K).T, in their common dtype."""
    return torch.addmm(residual, x, weight.t())


@residual_gemm.register_fake
def _residual_gemm_fake(residual, x, weight):
    return residual.new_empty(residual.shape)


@residual_gemm.register_kernel("cuda")
def _residual_gemm_cuda(residual: Tensor, x: Tensor, weight: Tensor) -> Tensor:
    from quack.gemm_interface import gemm_add

    return gemm_add(x.contiguous(), weight.t(), residual.contiguous(), tuned=False)


def _residual_gemm_setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[1], inputs[2])


def _residual_gemm_grad(ctx, grad: Tensor):
    x, weight = ctx.saved_tensors
    return grad, grad @ weight, grad.t() @ x


residual_gemm.register_autograd(_residual_gemm_grad, setup_context=_residual_gemm_setup_context)
