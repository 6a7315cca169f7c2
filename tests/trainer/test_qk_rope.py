import pytest
import torch
import torch.nn.functional as F

from trainer.model import rope_tables
from trainer.qk_rope import apply_rope, qk_norm_rope, qk_norm_rope_backward
from trainer_support import assert_as_close_as, relative_error

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="the Triton kernels need a CUDA GPU")


def _reference(q, k, cos, sin, gain, k_repeats):
    """The PyTorch ops scoring runs (trainer/model.py, CausalSelfAttention.heads), the keys then
    repeated as training's FA4 attention takes them."""
    d = q.size(-1)
    q, k = F.rms_norm(q, (d,)), F.rms_norm(k, (d,))
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    return q * gain.to(q.dtype)[None, None, :, None], k.repeat_interleave(k_repeats, dim=2)


def _inputs(shape, kv_heads, rope_dims, dtype, device="cpu", seed=0, k_repeats=1):
    B, T, H, D = shape
    gen = torch.Generator().manual_seed(seed)
    q, k, grad_q, grad_k = (torch.randn(B, T, h, D, generator=gen)
                            for h in (H, kv_heads, H, kv_heads * k_repeats))
    gain = 5.25 + torch.randn(H, generator=gen)
    inv_freq = 1.0 / 10000 ** (torch.arange(0, rope_dims, 2, dtype=torch.float32) / rope_dims)
    cos, sin = rope_tables(T, inv_freq)
    q, k, grad_q, grad_k, cos, sin = (t.to(device=device, dtype=dtype)
                                      for t in (q, k, grad_q, grad_k, cos, sin))
    gain = gain.to(device=device, dtype=torch.promote_types(dtype, torch.float32))  # fp32 as the parameter
    return q, k, cos, sin, gain, grad_q, grad_k


def _outputs_and_grads(fn, q, k, cos, sin, gain, grad_q, grad_k):
    q, k, gain = (t.detach().requires_grad_() for t in (q, k, gain))
    out_q, out_k = fn(q, k, cos, sin, gain, grad_k.size(2) // k.size(2))
    grads = torch.autograd.grad((out_q, out_k), (q, k, gain), (grad_q, grad_k))
    return [out_q.detach(), out_k.detach(), *grads]


@pytest.mark.parametrize("rope_dims", [4, 16])  # partial RoPE and every dimension rotated
@pytest.mark.parametrize("k_repeats", [1, 2])  # the keys as they are, and one copy per query head
def test_matches_the_pytorch_ops_with_autograd(rope_dims, k_repeats):
    inputs = _inputs((2, 5, 4, 16), 2, rope_dims, torch.float64, k_repeats=k_repeats)
    fused = _outputs_and_grads(qk_norm_rope, *inputs)
    reference = _outputs_and_grads(_reference, *inputs)
    for value, expected in zip(fused, reference):
        assert value.abs().max() > 0 and relative_error(value, expected) < 1e-12


@pytest.mark.parametrize("k_repeats", [1, 2])
def test_custom_ops_are_registered_consistently(k_repeats):
    q, k, cos, sin, gain, grad_q, grad_k = _inputs((1, 3, 4, 8), 2, 4, torch.float32, seed=1,
                                                   k_repeats=k_repeats)
    torch.library.opcheck(qk_norm_rope, (q.requires_grad_(), k.requires_grad_(), cos, sin,
                                         gain.requires_grad_(), k_repeats))
    torch.library.opcheck(qk_norm_rope_backward, (grad_q, grad_k, q.detach(), k.detach(), cos, sin,
                                                  gain.detach()))


# On the GPU, bf16: the kernels against an fp64 evaluation of the same values, beside the error
# of the PyTorch ops in bf16. bf16 keeps 8 significant bits (relative rounding up to 2**-9).
@cuda
@pytest.mark.parametrize("shape, kv_heads, rope_dims, k_repeats",
                         [((3, 257, 8, 64), 4, 16, 1), ((3, 257, 8, 64), 4, 16, 2),
                          ((2, 100, 4, 32), 4, 32, 1), ((2, 64, 8, 64), 2, 2, 4)])
def test_kernels_match_fp64_as_closely_as_the_bf16_ops(shape, kv_heads, rope_dims, k_repeats):
    inputs = _inputs(shape, kv_heads, rope_dims, torch.bfloat16, device="cuda", seed=shape[1],
                     k_repeats=k_repeats)
    fused = _outputs_and_grads(qk_norm_rope, *inputs)
    plain = _outputs_and_grads(_reference, *inputs)
    exact = _outputs_and_grads(_reference, *(t.double() for t in inputs))
    assert_as_close_as(fused, plain, exact, 2**-9)


@cuda
def test_kernels_compile_into_one_graph():
    inputs = _inputs((2, 128, 8, 64), 4, 16, torch.bfloat16, device="cuda", seed=7, k_repeats=2)
    compiled = torch.compile(qk_norm_rope, fullgraph=True)
    for value, expected in zip(_outputs_and_grads(compiled, *inputs),
                               _outputs_and_grads(qk_norm_rope, *inputs)):
        assert torch.equal(value, expected)
