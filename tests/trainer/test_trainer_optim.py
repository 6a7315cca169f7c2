import dataclasses

import pytest
import torch

from trainer.config import load_config
from trainer.distributed import Dist
from trainer.model import GPT, CastedLinear
from trainer.optim import NS_COEFFS, Muon, build_optimizers, newton_schulz, shape_banks

TINY = load_config({"PRESET": "tiny"})


@pytest.mark.parametrize("coeffs, low", [("classic", 0.6), ("polar_express", 0.8)])
@pytest.mark.parametrize("shape", [(64, 128), (256, 64)])
def test_newton_schulz_orthogonalizes(coeffs, low, shape):
    g = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    out = newton_schulz(g, NS_COEFFS[coeffs], 5)
    assert out.shape == shape and out.dtype == torch.bfloat16
    singular = torch.linalg.svdvals(out.float())
    assert low < singular.min() and singular.max() < 1.2
    # Same row and column spaces: the orthogonal polar factor U V^T up to the singular values.
    u, _, vh = torch.linalg.svd(g, full_matrices=False)
    assert torch.allclose(out.float(), u @ vh, atol=0.5)


def test_muon_step_is_nesterov_rownorm_ns_scale_and_decay():
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(32, 16))
    start = p.detach().clone()
    p.grad = torch.randn(32, 16)
    opt = Muon([p], lr=0.1, momentum=0.9, weight_decay=0.5, backend_steps=5, coeffs=NS_COEFFS["classic"],
               row_normalize=True, dist=Dist())
    opt.step()
    g = p.grad + 0.9 * p.grad  # Nesterov with an empty buffer: g + momentum * (0 * m + g)
    g = g / g.norm(dim=-1, keepdim=True)
    update = newton_schulz(g, NS_COEFFS["classic"], 5).float() * 2 ** 0.5  # rows / cols = 2
    expected = start * (1 - 0.1 * 0.5) - 0.1 * update.bfloat16().float()
    assert torch.allclose(p.detach(), expected, atol=1e-6)


def test_newton_schulz_of_a_stack_is_each_matrix_alone():
    g = torch.randn(3, 96, 32, generator=torch.Generator().manual_seed(1))
    stacked = newton_schulz(g, NS_COEFFS["classic"], 5)
    alone = torch.stack([newton_schulz(m, NS_COEFFS["classic"], 5) for m in g])
    assert torch.allclose(stacked.float(), alone.float(), atol=1e-2)
    assert (stacked.float() - g.float()).abs().max() > 0.1  # it did transform


def test_banked_steps_equal_one_matrix_at_a_time():
    """Two steps over mixed shapes (momentum carried): each matrix ends where the single-matrix
    optimizer, given only that matrix and the same gradients, puts it."""
    gen = torch.Generator().manual_seed(2)
    shapes = [(32, 16), (16, 32), (32, 16), (8, 8), (16, 32)]
    starts = [torch.randn(s, generator=gen) for s in shapes]
    grads = [[torch.randn(s, generator=gen) for s in shapes] for _ in range(2)]
    kw = dict(lr=0.1, momentum=0.9, weight_decay=0.5, backend_steps=5, coeffs=NS_COEFFS["polar_express"],
              row_normalize=True, dist=Dist())
    banked = [torch.nn.Parameter(s.clone()) for s in starts]
    singles = [torch.nn.Parameter(s.clone()) for s in starts]
    opt, single_opts = Muon(banked, **kw), [Muon([p], **kw) for p in singles]
    assert shape_banks(banked) == [[0, 2], [1, 4], [3]]
    for step_grads in grads:
        for p, q, g in zip(banked, singles, step_grads):
            p.grad, q.grad = g.clone(), g.clone()
        opt.step()
        for single in single_opts:
            single.step()
    for p, q, start in zip(banked, singles, starts):
        assert torch.allclose(p.detach(), q.detach(), atol=1e-4)
        assert (p.detach() - start).abs().max() > 0.01


def test_matrices_are_split_over_ranks():
    params = [torch.nn.Parameter(torch.zeros(4, 4)) for _ in range(11)]
    owners = [[Muon(params, lr=1, momentum=0, weight_decay=0, backend_steps=1, coeffs=NS_COEFFS["classic"],
                    row_normalize=False, dist=Dist(r, 4)).owns(i) for r in range(4)]
              for i in range(len(params))]
    assert all(sum(row) == 1 for row in owners)


@pytest.mark.parametrize("tied", [True, False])
def test_each_parameter_gets_one_optimizer(tied):
    cfg = dataclasses.replace(TINY, tie_embeddings=tied)
    model = GPT(cfg)
    opts = build_optimizers(cfg, model, Dist())
    seen = [id(p) for opt in opts.optimizers for g in opt.param_groups for p in g["params"]]
    assert sorted(seen) == sorted(id(p) for p in model.parameters())
    muon = {id(p) for g in opts.muon.param_groups for p in g["params"]}
    assert muon == {id(m.weight) for m in model.blocks.modules() if isinstance(m, CastedLinear)}
    embed = opts.optimizers[0].param_groups[0]
    assert embed["params"][0] is model.tok_emb.weight and embed["weight_decay"] == cfg.embed_wd
    assert embed["lr"] == (cfg.tied_embed_lr if tied else cfg.embed_lr)


def test_schedule_knobs_reach_every_group():
    model = GPT(TINY)
    opts = build_optimizers(TINY, model, Dist())
    opts.set_lr_scale(0.25)
    opts.set_muon_momentum(0.5)
    assert opts.muon.param_groups[0]["lr"] == 0.25 * TINY.matrix_lr
    assert opts.optimizers[1].param_groups[0]["lr"] == 0.25 * TINY.scalar_lr
    assert opts.muon.param_groups[0]["momentum"] == 0.5
