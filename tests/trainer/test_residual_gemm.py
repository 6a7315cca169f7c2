"""pgolf::residual_gemm, residual + x @ W^T: its autograd and registration on CPU (addmm), and on
a GPU quack's GEMM (on Hopper with its fixed tile) against fp64 as closely as cuBLAS's addmm in
bf16. The GPU tests are skipped without a CUDA GPU or without quack (`pip install 'pgolf[gpu]'`)."""

import importlib.util

import pytest
import torch

from trainer.residual_gemm import residual_gemm
from trainer_support import assert_as_close_as, relative_error

gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or importlib.util.find_spec("quack") is None,
    reason="the residual GEMM's kernel needs a CUDA GPU and the quack-kernels package")


def _reference(residual, x, weight):
    return residual + x @ weight.t()


def _inputs(M, K, N, dtype, device="cpu", seed=0):
    gen = torch.Generator().manual_seed(seed)
    residual, grad = torch.randn(2, M, N, generator=gen)
    x = torch.randn(M, K, generator=gen)
    weight = torch.randn(N, K, generator=gen) * K**-0.5
    return [t.to(device=device, dtype=dtype) for t in (residual, x, weight, grad)]


def _outputs_and_grads(fn, residual, x, weight, grad):
    leaves = [t.detach().requires_grad_() for t in (residual, x, weight)]
    out = fn(*leaves)
    return [out.detach(), *torch.autograd.grad(out, leaves, grad)]


def test_matches_residual_plus_matmul_with_autograd():
    inputs = _inputs(12, 8, 6, torch.float64)
    for value, expected in zip(_outputs_and_grads(residual_gemm, *inputs),
                               _outputs_and_grads(_reference, *inputs)):
        assert value.abs().max() > 0 and relative_error(value, expected) < 1e-12


def test_custom_op_is_registered_consistently():
    residual, x, weight, _ = _inputs(4, 8, 6, torch.float32, seed=1)
    torch.library.opcheck(residual_gemm, (residual.requires_grad_(), x.requires_grad_(),
                                          weight.requires_grad_()))


@gpu
# Both projections; and fewer rows than one of the fixed tile's 192, as in a short TTT chunk.
@pytest.mark.parametrize("M, K, N", [(4096, 512, 512), (2048, 2048, 512), (100, 512, 512)])
def test_quack_matches_fp64_as_closely_as_addmm(M, K, N):
    inputs = _inputs(M, K, N, torch.bfloat16, "cuda", seed=K)
    ours = _outputs_and_grads(residual_gemm, *inputs)
    addmm = _outputs_and_grads(lambda r, x, w: torch.addmm(r, x, w.t()), *inputs)
    exact = _outputs_and_grads(_reference, *(t.double() for t in inputs))
    assert all(t.dtype == torch.bfloat16 for t in addmm)
    assert_as_close_as(ours, addmm, exact, 2**-8)


@gpu
def test_compiled_graph_keeps_the_op_and_matches_eager():
    residual, x, weight, grad = _inputs(2048, 512, 512, torch.bfloat16, "cuda", seed=3)

    def projection(residual, x, weight):
        return residual_gemm(residual * 0.5, x, weight) + 1

    compiled = torch.compile(projection, fullgraph=True, dynamic=False)  # fails on a graph break
    for value, expected in zip(_outputs_and_grads(compiled, residual, x, weight, grad),
                               _outputs_and_grads(projection, residual, x, weight, grad)):
        assert relative_error(value, expected) < 1e-2
