"""residual + x @ W^T with the residual read in the GEMM's epilogue (quack, CuTe DSL, Hopper).

PyTorch's CUDA addmm copies the residual into its output before the GEMM accumulates onto it: a
read and a write of the (tokens, dim) stream more than the sum needs, twice per layer and
micro-batch in training (the attention's and the MLP's projections; docs/benchmarks.md, "The
residual read in the GEMM's epilogue, and the q/k backward's block size"). quack's GEMM reads
the residual in its epilogue instead, with a tile fixed for Hopper (`hopper_tile`), which the
quack MLP's backward GEMM shares. The op is
`pgolf::residual_gemm`, one call in the compiled graph; its backward is addmm's. On CUDA it needs
quack, and the model runs it only where the quack MLP runs (trainer/model.py); its default
implementation, on CPU, is addmm.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor


@functools.cache
def hopper_tile(device: torch.device):
    """quack's GEMM configuration for the residual GEMMs and the MLP's backward one on Hopper, None
    (quack's default) elsewhere. Its default tile, 128 x 192, leaves a third of its last column of
    tiles empty at 512 outputs; 192 x 128 in 1 x 2 clusters ran the record's three shapes
    faster (docs/benchmarks.md, "A fixed tile for quack's GEMMs"), and fixed, it is
    the same for every shape, where quack's autotuner would time each new one in the process."""
    from quack.gemm_config import GemmConfig

    if torch.cuda.get_device_capability(device)[0] != 9:
        return None
    return GemmConfig(tile_m=192, tile_n=128, pingpong=True, cluster_m=1, cluster_n=2,
                      is_dynamic_persistent=False, device_capacity=9)


def quack_gemm_add(residual: Tensor, x: Tensor, weight: Tensor) -> Tensor:
    """residual (M, N) + x (M, K) @ weight (N, K).T through quack, with `hopper_tile`."""
    from quack.gemm_interface import gemm_tuned

    x = x.contiguous()
    out = torch.empty(x.size(0), weight.size(0), device=x.device, dtype=x.dtype)
    # The untuned entry point: it takes a configuration, gemm_add does not.
    gemm_tuned.fn(x, weight.t(), out, residual.contiguous(), config=hopper_tile(x.device))
    return out


@torch.library.custom_op("pgolf::residual_gemm", mutates_args=())
def residual_gemm(residual: Tensor, x: Tensor, weight: Tensor) -> Tensor:
    """residual (M, N) + x (M, K) @ weight (N, K).T, in their common dtype."""
    return torch.addmm(residual, x, weight.t())


@residual_gemm.register_fake
def _residual_gemm_fake(residual, x, weight):
    return residual.new_empty(residual.shape)


residual_gemm.register_kernel("cuda", quack_gemm_add)


def _residual_gemm_setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[1], inputs[2])


def _residual_gemm_grad(ctx, grad: Tensor):
    x, weight = ctx.saved_tensors
    return grad, grad @ weight, grad.t() @ x


residual_gemm.register_autograd(_residual_gemm_grad, setup_context=_residual_gemm_setup_context)
