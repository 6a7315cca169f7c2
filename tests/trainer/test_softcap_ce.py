import pytest
import torch
import torch.nn.functional as F

from trainer.softcap_ce import (
    softcap_ce_rows,
    softcap_ce_rows_backward,
    softcapped_cross_entropy,
)

SOFTCAP = 30.0
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="the Triton kernels need a CUDA GPU")


def _inputs(rows, vocab, dtype, device="cpu", seed=0):
    """Logits spread well past the softcap (tanh saturates) and random targets."""
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(rows, vocab, generator=gen) * 20).to(dtype)
    targets = torch.randint(0, vocab, (rows,), generator=gen)
    return logits.to(device), targets.to(device)


def _loss_and_grad(fn, logits, targets):
    logits = logits.detach().requires_grad_()
    loss = fn(logits, targets)
    return loss.detach(), torch.autograd.grad(loss, logits)[0]


def _reference(logits, targets):
    """The formula with autograd, in fp32 from the input values (as the op computes s)."""
    return F.cross_entropy(SOFTCAP * torch.tanh(logits / SOFTCAP), targets)


def _fused(logits, targets):
    return softcapped_cross_entropy(logits, targets, SOFTCAP)


def _relative(value, reference):
    return ((value.float() - reference).abs().max() / reference.abs().max()).item()


# bf16 keeps 8 significant bits: rounding the gradient costs up to 2**-8 of an entry, so 2**-7 of the
# largest entry bounds it with room for fp32 rounding differences. fp32 outputs agree to a few ulp.
BF16_GRAD_TOL = 2**-7


@pytest.mark.parametrize("dtype, grad_tol", [(torch.float32, 1e-6), (torch.bfloat16, BF16_GRAD_TOL)])
def test_matches_cross_entropy_of_softcapped_logits(dtype, grad_tol):
    logits, targets = _inputs(37, 1000, dtype)
    loss, grad = _loss_and_grad(_fused, logits, targets)
    ref_loss, ref_grad = _loss_and_grad(_reference, logits.float(), targets)
    assert loss.dtype == torch.float32 and loss.shape == ()
    assert _relative(loss, ref_loss) < 1e-6
    assert grad.dtype == dtype and grad.abs().max() > 0
    assert _relative(grad, ref_grad) < grad_tol


def test_backward_takes_a_per_row_upstream_gradient():
    logits, targets = _inputs(11, 300, torch.float32, seed=1)
    weights = torch.rand(11)

    def fused(z, t):
        return (softcap_ce_rows(z, t, SOFTCAP)[0] * weights).sum()

    def reference(z, t):
        return (F.cross_entropy(SOFTCAP * torch.tanh(z / SOFTCAP), t, reduction="none") * weights).sum()

    _, grad = _loss_and_grad(fused, logits, targets)
    _, ref_grad = _loss_and_grad(reference, logits, targets)
    assert _relative(grad, ref_grad) < 1e-6


def test_custom_ops_are_registered_consistently():
    logits, targets = _inputs(5, 7, torch.float32, seed=2)
    torch.library.opcheck(softcap_ce_rows, (logits.requires_grad_(), targets, SOFTCAP))
    lse = torch.logsumexp(SOFTCAP * torch.tanh(logits.detach() / SOFTCAP), dim=1)
    torch.library.opcheck(softcap_ce_rows_backward, (torch.rand(5), logits.detach(), targets, lse, SOFTCAP))


def test_traces_as_one_graph():
    logits, targets = _inputs(9, 13, torch.bfloat16, seed=3)
    compiled = torch.compile(_fused, backend="aot_eager", fullgraph=True)
    loss, grad = _loss_and_grad(compiled, logits, targets)
    ref_loss, ref_grad = _loss_and_grad(_fused, logits, targets)
    assert torch.equal(loss, ref_loss) and torch.equal(grad, ref_grad)


# Forward: both sides are fp32 from the same bf16 values and differ only by fp32 rounding of tanh and
# exp and the order of the sums (~1e-6 relative); 1e-4 keeps a wide margin while failing on an s
# rounded to bf16 (2**-8 = 4e-3). Backward: BF16_GRAD_TOL, the rounding of the bf16 gradient.
@cuda
@pytest.mark.parametrize("vocab", [8192, 1000, 40000])
def test_triton_kernels_match_the_fp32_formula(vocab):
    logits, targets = _inputs(777, vocab, torch.bfloat16, "cuda")
    loss, grad = _loss_and_grad(_fused, logits, targets)
    ref_loss, ref_grad = _loss_and_grad(_reference, logits.float(), targets)
    assert _relative(loss, ref_loss) < 1e-4
    assert grad.dtype == torch.bfloat16 and grad.abs().max() > 0
    assert _relative(grad, ref_grad) < BF16_GRAD_TOL


@cuda
def test_triton_kernels_under_torch_compile():
    logits, targets = _inputs(777, 8192, torch.bfloat16, "cuda", seed=4)
    weight = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) / 8192**0.5

    def head_loss(x, t):
        return softcapped_cross_entropy(F.linear(x, weight), t, SOFTCAP)

    compiled = torch.compile(head_loss, fullgraph=True, dynamic=False)
    loss, grad = _loss_and_grad(compiled, logits, targets)
    ref_loss, ref_grad = _loss_and_grad(head_loss, logits, targets)
    assert _relative(loss, ref_loss) < 1e-4
    assert grad.dtype == torch.bfloat16 and grad.abs().max() > 0
    assert _relative(grad, ref_grad.float()) < BF16_GRAD_TOL
