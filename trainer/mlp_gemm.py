"""The MLP with LeakyReLU(0.5)^2 computed in the GEMM epilogues (quack, CuTe DSL, Hopper).

Unfused, the up projection writes its (tokens, hidden) output, an elementwise kernel reads it
back to apply the activation, and the backward does the same for the activation's derivative.
Here the up projection's epilogue writes the pre-activation (kept for the backward) and the
activation, and the backward's first GEMM, grad_y @ W_proj, multiplies by the derivative in its
epilogue and re-derives the activation there for W_proj's gradient. A residual, where given, is
read in the down projection's epilogue (trainer/residual_gemm.py says why).
Forward and backward are each one torch custom op, opaque to torch.compile, joined by autograd.

leaky(h) = 0.5 (h + relu(h)); d/dh leaky(h)^2 = 0.5 h + 1.5 relu(h).
"""

from __future__ import annotations

import functools

import torch

from trainer.residual_gemm import hopper_tile, quack_gemm_add

SLOPE = 0.5  # the epilogues' constants are this slope's


@functools.cache
def epilogues():
    """(forward, backward) quack epilogue GEMMs; raises ImportError where quack is missing."""
    from quack.activation import relu
    from quack.epilogue.frontend import gemm_epilogue

    @gemm_epilogue(outputs=("postact",))
    def up_leaky_sq(acc):
        lk = (acc + relu(acc)) * 0.5
        return {"D": acc, "postact": lk * lk}

    @gemm_epilogue(outputs=("postact",))
    def down_dleaky_sq(acc, c):
        # acc = grad_y @ W_proj, the gradient of the activation; c = the pre-activation.
        r = relu(c)
        lk = (c + r) * 0.5
        return {"D": acc * (c * 0.5 + r * 1.5), "postact": lk * lk}

    return up_leaky_sq, down_dleaky_sq


@torch.library.custom_op("pgolf::leaky_sq_mlp_fwd", mutates_args=())
def mlp_fwd(x: torch.Tensor, w_fc: torch.Tensor, w_proj: torch.Tensor,
            residual: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """x (M, dim), w_fc (hidden, dim), w_proj (dim, hidden), residual (M, dim) or None
    -> (y (M, dim), pre-activation); y includes the residual."""
    up = epilogues()[0](x, w_fc.t(), tuned=False)  # quack's default tile was the fastest here
    if residual is None:
        return up["postact"] @ w_proj.t(), up["D"]
    return quack_gemm_add(residual, up["postact"], w_proj), up["D"]


@mlp_fwd.register_fake
def _mlp_fwd_fake(x, w_fc, w_proj, residual):
    return x.new_empty(x.size(0), w_proj.size(0)), x.new_empty(x.size(0), w_fc.size(0))


@torch.library.custom_op("pgolf::leaky_sq_mlp_bwd", mutates_args=())
def mlp_bwd(dy: torch.Tensor, x: torch.Tensor, w_fc: torch.Tensor, w_proj: torch.Tensor,
            pre: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    down = epilogues()[1](dy, w_proj, C=pre, config=hopper_tile(dy.device), tuned=False)
    dpre, post = down["D"], down["postact"]
    return dpre @ w_fc, dpre.t() @ x, dy.t() @ post


@mlp_bwd.register_fake
def _mlp_bwd_fake(dy, x, w_fc, w_proj, pre):
    return torch.empty_like(x), torch.empty_like(w_fc), torch.empty_like(w_proj)


def _mlp_setup(ctx, inputs, output):
    x, w_fc, w_proj, residual = inputs
    ctx.save_for_backward(x, w_fc, w_proj, output[1])
    ctx.has_residual = residual is not None


def _mlp_backward(ctx, dy, dpre):
    x, w_fc, w_proj, pre = ctx.saved_tensors
    dy = dy.contiguous()
    return *mlp_bwd(dy, x, w_fc, w_proj, pre), dy if ctx.has_residual else None


mlp_fwd.register_autograd(_mlp_backward, setup_context=_mlp_setup)


def fused_mlp(x: torch.Tensor, w_fc: torch.Tensor, w_proj: torch.Tensor,
              residual: torch.Tensor | None = None) -> torch.Tensor:
    """proj(leaky_relu(fc(x), 0.5)^2) for x (..., dim), plus `residual` (..., dim) where
    given, through the fused GEMMs."""
    if residual is not None:
        residual = residual.reshape(-1, residual.size(-1)).contiguous()
    y = mlp_fwd(x.reshape(-1, x.size(-1)).contiguous(), w_fc.contiguous(), w_proj.contiguous(),
                residual)[0]
    return y.view(*x.shape[:-1], y.size(-1))


def fused_mlp_problem(device: torch.device, dim: int, hidden: int, slope: float) -> str | None:
    """None when the fused MLP runs forward and backward here; else why it cannot."""
    if device.type != "cuda":
        return "CPU"
    if slope != SLOPE:
        return f"its epilogues are LeakyReLU({SLOPE})^2, the model's slope is {slope}"
    try:
        epilogues()
    except ImportError as exc:
        return f"quack not installed ({exc})"
    try:
        x = torch.randn(256, dim, device=device, dtype=torch.bfloat16, requires_grad=True)
        w_fc, w_proj = (torch.randn(shape, device=device, dtype=torch.bfloat16, requires_grad=True)
                        for shape in ((hidden, dim), (dim, hidden)))
        fused_mlp(x, w_fc, w_proj, residual=torch.randn_like(x)).float().sum().backward()
        torch.cuda.synchronize(device)
    except Exception as exc:  # any failure of a third-party kernel means: do not use it
        text = str(exc).strip().splitlines()
        return f"quack failed a test step ({type(exc).__name__}: {text[0][:160] if text else ''})"
    return None
