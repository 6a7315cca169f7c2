import pytest
import torch

from trainer.xsa import exclusive_self_attention as _reference  # the PyTorch ops scoring runs
from trainer.xsa import fused_exclusive_self_attention, xsa_backward
from trainer_support import assert_as_close_as, relative_error

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="the Triton kernels need a CUDA GPU")


def _inputs(shape, kv_heads, dtype, device="cpu", seed=0):
    B, T, H, D = shape
    gen = torch.Generator().manual_seed(seed)
    y, v, grad = (torch.randn(B, T, h, D, generator=gen) for h in (H, kv_heads, H))
    return [t.to(device=device, dtype=dtype) for t in (y, v, grad)]


def _output_and_grads(fn, y, v, grad):
    y, v = y.detach().requires_grad_(), v.detach().requires_grad_()
    out = fn(y, v)
    return [out.detach(), *torch.autograd.grad(out, (y, v), grad)]


def test_matches_the_formula_with_autograd_including_a_zero_value_vector():
    y, v, grad = _inputs((2, 5, 8, 16), 4, torch.float64)
    v[1, 3, 2] = 0.0  # F.normalize clamps its norm to eps: the other branch of the backward
    fused = _output_and_grads(fused_exclusive_self_attention, y, v, grad)
    reference = _output_and_grads(_reference, y, v, grad)
    for value, expected in zip(fused, reference):
        assert value.abs().max() > 0 and relative_error(value, expected) < 1e-12


def test_custom_ops_are_registered_consistently():
    y, v, grad = _inputs((1, 3, 4, 8), 2, torch.float32, seed=1)
    torch.library.opcheck(fused_exclusive_self_attention, (y.requires_grad_(), v.requires_grad_()))
    torch.library.opcheck(xsa_backward, (grad, y.detach(), v.detach()))


# On the GPU, bf16: the kernels against an fp64 evaluation of the same values, beside the error
# of the PyTorch formula in bf16. bf16 keeps 8 significant bits (relative rounding up to 2**-9).
@cuda
@pytest.mark.parametrize("shape, kv_heads", [((3, 257, 8, 64), 4), ((2, 100, 4, 32), 4), ((2, 64, 8, 64), 2)])
def test_kernels_match_fp64_as_closely_as_the_bf16_formula(shape, kv_heads):
    y, v, grad = _inputs(shape, kv_heads, torch.bfloat16, device="cuda", seed=shape[1])
    fused = _output_and_grads(fused_exclusive_self_attention, y, v, grad)
    plain = _output_and_grads(_reference, y, v, grad)
    exact = _output_and_grads(_reference, y.double(), v.double(), grad.double())
    assert all(t.dtype == torch.bfloat16 for t in plain)
    assert_as_close_as(fused, plain, exact, 2**-9)


@cuda
def test_kernels_take_the_attention_output_layout_and_compile():
    """y as SDPA returns it (a transposed view) and under torch.compile."""
    y, v, grad = _inputs((2, 128, 8, 64), 4, torch.bfloat16, device="cuda", seed=7)
    y_view = y.transpose(1, 2).contiguous().transpose(1, 2)  # same values, not contiguous
    compiled = torch.compile(fused_exclusive_self_attention, fullgraph=True)
    for value, expected in zip(_output_and_grads(compiled, y_view, v, grad),
                               _output_and_grads(fused_exclusive_self_attention, y, v, grad)):
        assert torch.equal(value, expected)
