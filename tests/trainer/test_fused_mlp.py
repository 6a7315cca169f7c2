import pytest
import torch
import torch.nn.functional as F

from trainer.fused_mlp import leaky_relu2_mlp, leaky_relu2_mlp_backward, leaky_relu2_mlp_rows

SLOPE = 0.5
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="the Triton kernels need a CUDA GPU")


def _inputs(rows, dim, hidden, dtype, device="cpu", seed=0):
    """Random activations and weights at the scales of a trained block (never zeros)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, dim, generator=gen)
    w_fc = torch.randn(hidden, dim, generator=gen) / dim**0.5
    w_proj = torch.randn(dim, hidden, generator=gen) / hidden**0.5
    grad_y = torch.randn(rows, dim, generator=gen)
    return [t.to(device=device, dtype=dtype) for t in (x, w_fc, w_proj, grad_y)]


def _formula(x, w_fc, w_proj, slope=SLOPE):
    return F.linear(F.leaky_relu(F.linear(x, w_fc), slope).square(), w_proj)


def _output_and_grads(fn, x, w_fc, w_proj, grad_y):
    leaves = [t.detach().requires_grad_() for t in (x, w_fc, w_proj)]
    y = fn(*leaves)
    return [y.detach(), *torch.autograd.grad(y, leaves, grad_y)]


def _relative(value, reference):
    return ((value.double() - reference.double()).norm() / reference.double().norm()).item()


@pytest.mark.parametrize("slope", [SLOPE, 0.0])
def test_matches_the_formula_with_autograd(slope):
    x, w_fc, w_proj, grad_y = _inputs(37, 24, 96, torch.float64)
    fused = _output_and_grads(lambda *t: leaky_relu2_mlp(*t, slope), x, w_fc, w_proj, grad_y)
    reference = _output_and_grads(lambda *t: _formula(*t, slope), x, w_fc, w_proj, grad_y)
    for value, expected in zip(fused, reference):
        assert value.abs().max() > 0
        assert _relative(value, expected) < 1e-12


def test_keeps_leading_dimensions():
    x, w_fc, w_proj, _ = _inputs(12, 8, 32, torch.float32)
    y = leaky_relu2_mlp(x.view(3, 4, 8), w_fc, w_proj, SLOPE)
    assert y.shape == (3, 4, 8)
    assert torch.allclose(y.view(12, 8), _formula(x, w_fc, w_proj), atol=1e-6)


def test_custom_ops_are_registered_consistently():
    x, w_fc, w_proj, grad_y = _inputs(5, 8, 16, torch.float32, seed=1)
    torch.library.opcheck(leaky_relu2_mlp_rows,
                          (x.requires_grad_(), w_fc.requires_grad_(), w_proj.requires_grad_(), SLOPE))
    h = x.detach() @ w_fc.detach().T
    torch.library.opcheck(leaky_relu2_mlp_backward, (grad_y, w_proj.detach(), h, SLOPE))


def test_traces_as_one_graph():
    x, w_fc, w_proj, grad_y = _inputs(16, 8, 32, torch.float32, seed=2)
    compiled = torch.compile(lambda *t: leaky_relu2_mlp(*t, SLOPE), backend="aot_eager", fullgraph=True)
    fused = _output_and_grads(compiled, x, w_fc, w_proj, grad_y)
    reference = _output_and_grads(_formula, x, w_fc, w_proj, grad_y)
    for value, expected in zip(fused, reference):
        assert _relative(value, expected) < 1e-6


# On the GPU, bf16 inputs: the kernels against an fp64 evaluation of the same values, beside the
# error the unfused bf16 formula makes. bf16 keeps 8 significant bits, so relative errors near
# 2**-9 are rounding; the fused version may not be worse than the unfused one by more than that.
@cuda
@pytest.mark.parametrize("rows, dim, hidden", [(4096 + 37, 512, 2048), (300, 96, 200)])
def test_kernels_match_fp64_as_closely_as_the_unfused_formula(rows, dim, hidden):
    x, w_fc, w_proj, grad_y = _inputs(rows, dim, hidden, torch.bfloat16, device="cuda", seed=rows)
    fused = _output_and_grads(lambda *t: leaky_relu2_mlp(*t, SLOPE), x, w_fc, w_proj, grad_y)
    unfused = _output_and_grads(_formula, x, w_fc, w_proj, grad_y)
    exact = _output_and_grads(_formula, *(t.double() for t in (x, w_fc, w_proj, grad_y)))
    for value, plain, expected in zip(fused, unfused, exact):
        assert value.dtype == torch.bfloat16 and torch.isfinite(value).all()
        error = _relative(value, expected)
        assert error < 1e-2
        assert error < _relative(plain, expected) + 2**-9


@cuda
def test_kernels_under_torch_compile():
    x, w_fc, w_proj, grad_y = _inputs(2048, 512, 2048, torch.bfloat16, device="cuda", seed=3)
    compiled = torch.compile(lambda *t: leaky_relu2_mlp(*t, SLOPE), fullgraph=True)
    fused = _output_and_grads(compiled, x, w_fc, w_proj, grad_y)
    eager = _output_and_grads(lambda *t: leaky_relu2_mlp(*t, SLOPE), x, w_fc, w_proj, grad_y)
    for value, expected in zip(fused, eager):  # the graph's matmuls may pick other cuBLAS kernels
        assert _relative(value, expected) < 1e-3
