"""The MLP with LeakyReLU(0.5)^2 in quack's GEMM epilogues against the PyTorch ops, on a GPU.

Skipped without a CUDA GPU or without quack (`pip install 'pgolf[gpu]'`); the CPU test checks
the fallback. bf16: each output and gradient must be as close to an fp64 evaluation as the bf16
PyTorch ops are (plus one rounding), and within 1e-2 relative.
"""

import importlib.util

import pytest
import torch
import torch.nn.functional as F

from trainer.mlp_gemm import fused_mlp, fused_mlp_problem
from trainer_support import assert_as_close_as, relative_error

gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or importlib.util.find_spec("quack") is None,
    reason="the fused MLP needs a CUDA GPU and the quack-kernels package")


def _reference(x, w_fc, w_proj, residual=None):
    y = F.linear(F.leaky_relu(F.linear(x, w_fc), 0.5).square(), w_proj)
    return y if residual is None else residual + y


def _outputs(fn, grad, *inputs):
    leaves = [t.detach().requires_grad_() for t in inputs]
    out = fn(*leaves)
    return [out.detach(), *torch.autograd.grad(out, leaves, grad)]


def _inputs(M, dim, hidden, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(M // 256, 256, dim, device="cuda", generator=gen)
    w_fc = torch.randn(hidden, dim, device="cuda", generator=gen) * dim**-0.5
    w_proj = torch.randn(dim, hidden, device="cuda", generator=gen) * hidden**-0.5
    grad, residual = torch.randn(2, M // 256, 256, dim, device="cuda", generator=gen)
    return [t.bfloat16() for t in (x, w_fc, w_proj, grad, residual)]


@gpu
@pytest.mark.parametrize("M, dim, hidden", [(4096, 512, 2048), (1024, 256, 1024)])
@pytest.mark.parametrize("with_residual", [False, True])
def test_fused_matches_fp64_as_closely_as_the_torch_ops(M, dim, hidden, with_residual):
    x, w_fc, w_proj, grad, residual = _inputs(M, dim, hidden, seed=dim)
    inputs = (x, w_fc, w_proj, residual) if with_residual else (x, w_fc, w_proj)
    ours = _outputs(fused_mlp, grad, *inputs)
    bf16 = _outputs(_reference, grad, *inputs)
    exact = _outputs(_reference, grad.double(), *(t.double() for t in inputs))
    assert all(t.dtype == torch.bfloat16 for t in bf16)
    assert_as_close_as(ours, bf16, exact, 2**-8)


@gpu
def test_compiled_graph_keeps_the_op_and_matches_eager():
    x, w_fc, w_proj, grad, _ = _inputs(2048, 512, 2048, seed=3)

    def block(x, w_fc, w_proj):
        return fused_mlp(x * 0.5, w_fc, w_proj, residual=x)

    compiled = torch.compile(block, fullgraph=True, dynamic=False)  # fails on a graph break
    for value, expected in zip(_outputs(compiled, grad, x, w_fc, w_proj),
                               _outputs(block, grad, x, w_fc, w_proj)):
        assert relative_error(value, expected) < 1e-2


def test_falls_back_where_it_cannot_run():
    assert fused_mlp_problem(torch.device("cpu"), 64, 256, 0.5) == "CPU"
    if torch.cuda.is_available():
        assert "slope" in fused_mlp_problem(torch.device("cuda"), 64, 256, 0.3)
