"""Muon for the block matrices, AdamW for the embedding and the small parameters.

Muon (Keller Jordan, modded-nanogpt) replaces each matrix's momentum update by an approximately
orthogonal matrix from a few Newton-Schulz iterations. Here, as in the records:
  - Nesterov momentum, warmed up from MUON_MOMENTUM_WARMUP_START over the first steps;
  - MuonEq-R: each row of the update is normalized before Newton-Schulz (PR #1260);
  - the classic quintic coefficients, or Polar Express's per-iteration ones (arXiv:2505.16932,
    PR #1344);
  - scale by sqrt(max(1, rows/cols)); decoupled weight decay p *= 1 - lr * wd;
  - across ranks matrix i is orthogonalized on rank i % world, and one all-reduce of the flat
    bf16 updates gives every rank all of them (root train_gpt.py).
Matrices of one shape form a bank that is updated as one stacked tensor: momentum with foreach
ops, one batched Newton-Schulz per bank (the records' parameter banking, PR #399): stepping the
record model's 66 matrices one by one was a tenth of the step, nearly all of it kernel launches
(docs/benchmarks.md, "Banked Muon and the fused softcapped cross-entropy").
Which optimizer a parameter gets follows from the module that owns it, not from its name.

On one GPU the whole step (clipping, every optimizer, zeroing the gradients) is replayed as one
CUDA graph: its few hundred small kernels take the CPU longer to launch than the GPU to run
(docs/benchmarks.md, "The optimizer step as one CUDA graph, and the profile split"). A graph
replays fixed addresses, so gradients are zeroed in place, never freed; learning rates and
momentum are device tensors the schedule fills; restored state is copied into the tensors the
graph holds.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from trainer.config import Config
from trainer.distributed import Dist, all_reduce
from trainer.errors import TrainerError
from trainer.model import GPT, CastedLinear
from trainer.runlog import log

# Eager steps before the graph is captured: they compile Newton-Schulz and create every state.
GRAPH_AFTER_STEPS = 2

NS_COEFFS = {
    "classic": ((3.4445, -4.7750, 2.0315),),
    # One (a, b, c) per iteration; more iterations than tuples repeat the last one.
    "polar_express": (
        (8.156554524902461, -22.48329292557795, 15.878769915207462),
        (4.042929935166739, -2.808917465908714, 0.5000178451051316),
        (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
        (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
        (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
    ),
}


def newton_schulz(g: torch.Tensor, coeffs: tuple[tuple[float, float, float], ...],
                  steps: int) -> torch.Tensor:
    """Approximately orthogonal matrices with the row and column spaces of g (..., rows, cols),
    in bf16; a stack of matrices is orthogonalized in one batched pass."""
    x = g.bfloat16()
    transposed = x.size(-2) > x.size(-1)
    if transposed:  # iterate on the wide orientation: X X^T is the smaller Gram matrix
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)  # spectral norm <= Frobenius norm <= 1
    for i in range(steps):
        a, b, c = coeffs[min(i, len(coeffs) - 1)]
        gram = x @ x.mT
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.mT if transposed else x


def shape_banks(params: list[torch.Tensor]) -> list[list[int]]:
    """Indices of `params` grouped by shape, in first-seen order."""
    banks: dict[torch.Size, list[int]] = {}
    for i, p in enumerate(params):
        banks.setdefault(p.shape, []).append(i)
    return list(banks.values())


class Muon(torch.optim.Optimizer):
    def __init__(self, params: list[nn.Parameter], *, lr: float, momentum: float,
                 weight_decay: float, backend_steps: int,
                 coeffs: tuple[tuple[float, float, float], ...], row_normalize: bool,
                 dist: Dist, compile_ns: bool = False):
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay)
        super().__init__(params, defaults)
        self.steps, self.coeffs, self.row_normalize = backend_steps, coeffs, row_normalize
        self.dist = dist
        self.orthogonalize = torch.compile(newton_schulz, dynamic=False) if compile_ns else newton_schulz

    def owns(self, index: int) -> bool:
        """Whether this rank orthogonalizes the index-th matrix."""
        return index % self.dist.world_size == self.dist.rank

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            params = group["params"]
            sizes = [p.numel() for p in params]
            flat = torch.zeros(sum(sizes), device=params[0].device, dtype=torch.bfloat16)
            views = flat.split(sizes)
            for bank in shape_banks(params):
                mine = [i for i in bank if self.owns(i) and params[i].grad is not None]
                if mine:
                    updates = self._updates([params[i] for i in mine], group["momentum"])
                    torch._foreach_copy_([views[i] for i in mine], list(updates.flatten(1)))
            all_reduce(flat)
            # lr and momentum are floats, or 0-d device tensors when the step is a CUDA graph.
            torch._foreach_mul_(params, 1.0 - group["lr"] * group["weight_decay"])
            updates = (flat.float() * -group["lr"]).split(sizes)
            torch._foreach_add_(params, [u.view_as(p) for u, p in zip(updates, params)])

    def _updates(self, params: list[nn.Parameter], momentum: float) -> torch.Tensor:
        """The orthogonalized updates of same-shape matrices, stacked (n, rows, cols), bf16."""
        grads = [p.grad for p in params]
        bufs = [self.state[p].setdefault("momentum_buffer", torch.zeros_like(p.grad)) for p in params]
        torch._foreach_mul_(bufs, momentum)
        torch._foreach_add_(bufs, grads)
        g = torch.stack(torch._foreach_add(grads, torch._foreach_mul(bufs, momentum)))  # Nesterov
        if self.row_normalize:
            g = g / g.float().norm(dim=-1, keepdim=True).clamp_min(1e-7).to(g.dtype)
        g = self.orthogonalize(g, self.coeffs, self.steps)
        return g * max(1.0, g.size(-2) / g.size(-1)) ** 0.5


class Optimizers:
    """All of a model's optimizers, stepped and scheduled together."""

    def __init__(self, optimizers: list[torch.optim.Optimizer], muon: Muon,
                 params: list[nn.Parameter], clip_norm: float, graphed: bool):
        self.optimizers, self.muon = optimizers, muon
        self.params, self.clip_norm, self.graphed = params, clip_norm, graphed
        self.graph: torch.cuda.CUDAGraph | None = None
        self.eager_steps = 0
        for opt in optimizers:
            for group in opt.param_groups:
                group["base_lr"] = float(group["lr"])
                if graphed:
                    group["lr"] = torch.tensor(group["base_lr"], device=params[0].device)
        if graphed:
            for group in muon.param_groups:
                group["momentum"] = torch.tensor(group["momentum"], device=params[0].device)

    def step(self) -> None:
        """Clip the gradients, step every optimizer, zero the gradients."""
        if not self.graphed:
            self._step()
        elif self.graph is not None:
            self.graph.replay()
        elif self.eager_steps < GRAPH_AFTER_STEPS:
            side = torch.cuda.Stream()  # warm-up before a capture runs on a side stream
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self._step()
            torch.cuda.current_stream().wait_stream(side)
            self.eager_steps += 1
        else:
            missing = sum(p.grad is None for p in self.params)
            if missing:
                raise TrainerError(f"{missing} parameters have no gradient to capture the "
                                   "optimizer step with; set OPTIMIZER_GRAPH=0")
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self._step()
            self.graph.replay()
            log("optimizer:captured as one CUDA graph")

    def _step(self) -> None:
        if self.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip_norm)
        for opt in self.optimizers:
            opt.step()
        self.zero_grad()

    def zero_grad(self) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=not self.graphed)

    def set_lr_scale(self, scale: float) -> None:
        for opt in self.optimizers:
            for group in opt.param_groups:
                _set(group, "lr", group["base_lr"] * scale)

    def set_muon_momentum(self, momentum: float) -> None:
        for group in self.muon.param_groups:
            _set(group, "momentum", momentum)

    def state_dict(self) -> list[dict]:
        return [opt.state_dict() for opt in self.optimizers]

    def load_state_dict(self, states: list[dict]) -> None:
        for opt, state in zip(self.optimizers, states):
            if self.graph is None:
                opt.load_state_dict(state)
            else:
                _load_in_place(opt, state)


def _set(group: dict, key: str, value: float) -> None:
    if isinstance(group[key], torch.Tensor):
        group[key].fill_(value)
    else:
        group[key] = value


def _load_in_place(opt: torch.optim.Optimizer, saved: dict) -> None:
    """`opt.load_state_dict(saved)` into the state tensors a captured graph holds. State created
    after `saved` was taken is zeroed: that is the fresh state of Adam's moments and step count
    and of Muon's momentum."""
    params = [p for group in opt.param_groups for p in group["params"]]
    for i, p in enumerate(params):
        kept = saved["state"].get(i, {})
        for key, value in opt.state[p].items():
            if key in kept:
                value.copy_(kept[key])
            else:
                value.zero_()


def build_optimizers(cfg: Config, model: GPT, dist: Dist) -> Optimizers:
    matrices = [m.weight for block in model.blocks for m in block.modules()
                if isinstance(m, CastedLinear)]
    head = [] if model.lm_head is None else [model.lm_head.weight]
    taken = {id(p) for p in matrices + head + [model.tok_emb.weight]}
    scalars = [p for p in model.parameters() if id(p) not in taken]  # gains, mixes, skips
    fused = model.tok_emb.weight.device.type == "cuda"
    graphed = fused and cfg.optimizer_graph and dist.world_size == 1
    adam = dict(betas=(cfg.beta1, cfg.beta2), eps=cfg.adam_eps, fused=fused, capturable=graphed)
    embed_lr = cfg.tied_embed_lr if cfg.tie_embeddings else cfg.embed_lr
    optimizers: list[torch.optim.Optimizer] = [
        torch.optim.AdamW([model.tok_emb.weight], lr=embed_lr, weight_decay=cfg.embed_wd, **adam),
        torch.optim.AdamW(scalars, lr=cfg.scalar_lr, weight_decay=cfg.adam_wd, **adam),
    ]
    if head:
        optimizers.append(torch.optim.Adam(head, lr=cfg.head_lr, **adam))
    muon = Muon(matrices, lr=cfg.matrix_lr, momentum=cfg.muon_momentum, weight_decay=cfg.muon_wd,
                backend_steps=cfg.muon_backend_steps, coeffs=NS_COEFFS[cfg.muon_ns_coeffs],
                row_normalize=cfg.muon_row_normalize, dist=dist,
                compile_ns=cfg.compile and fused)
    return Optimizers(optimizers + [muon], muon, list(model.parameters()), cfg.grad_clip_norm,
                      graphed)
