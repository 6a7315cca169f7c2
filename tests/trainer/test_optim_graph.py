"""The optimizer step as one CUDA graph: the tensors it reads, the restore it needs, its result."""

import copy
import dataclasses

import pytest
import torch

from trainer.config import load_config
from trainer.distributed import Dist
from trainer.model import GPT
from trainer.optim import GRAPH_AFTER_STEPS, NS_COEFFS, Muon, build_optimizers

TINY = load_config({"PRESET": "tiny"})


def muon_after_two_steps(lr, momentum):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(32, 16)), torch.nn.Parameter(torch.randn(16, 16))]
    opt = Muon(params, lr=lr, momentum=momentum, weight_decay=0.5, backend_steps=5,
               coeffs=NS_COEFFS["polar_express"], row_normalize=True, dist=Dist())
    for _ in range(2):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return [p.detach() for p in params] + [opt.state[p]["momentum_buffer"] for p in params]


def test_muon_reads_lr_and_momentum_as_tensors_as_it_reads_floats():
    # A captured graph reads the schedule's values from 0-d tensors it holds the addresses of.
    floats = muon_after_two_steps(0.05, 0.9)
    tensors = muon_after_two_steps(torch.tensor(0.05), torch.tensor(0.9))
    for a, b in zip(floats, tensors):
        assert torch.allclose(a, b, atol=1e-6)


def test_step_clips_then_zeroes_the_gradients():
    cfg = dataclasses.replace(TINY, grad_clip_norm=1e-3)
    model = GPT(cfg)
    opts = build_optimizers(cfg, model, Dist())
    assert not opts.graphed  # CPU
    norms = []
    opts.optimizers[0].register_step_pre_hook(lambda *_: norms.append(torch.linalg.vector_norm(
        torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None])).item()))
    x = torch.randint(0, cfg.vocab_size, (2, 16))
    model(x, x).backward()
    opts.step()
    assert norms and norms[0] == pytest.approx(1e-3, rel=1e-3)  # clipped before any step
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_graphed_steps_match_eager_steps_and_restore_in_place():
    device = torch.device("cuda")
    cfg = dataclasses.replace(TINY, grad_clip_norm=0.3)
    runs = {}
    for graphed in (False, True):
        torch.manual_seed(0)
        model = GPT(cfg).to(device)
        opts = build_optimizers(dataclasses.replace(cfg, optimizer_graph=graphed), model, Dist())
        assert opts.graphed == graphed
        fresh = copy.deepcopy(opts.state_dict())
        start = {k: v.clone() for k, v in model.state_dict().items()}
        gen = torch.Generator(device="cpu").manual_seed(1)
        batches = [torch.randint(0, cfg.vocab_size, (2, 16), generator=gen).to(device)
                   for _ in range(GRAPH_AFTER_STEPS + 3)]

        def train(batches):
            for i, x in enumerate(batches):
                opts.set_lr_scale(1.0 - 0.1 * i)
                opts.set_muon_momentum(0.85 + 0.01 * i)
                model(x, x).backward()
                opts.step()

        train(batches)  # the graphed run captures here: a warm-up, as the trainer's
        model.load_state_dict(start)
        opts.load_state_dict(fresh)
        opts.zero_grad()
        train(batches)  # from the start again: must give the same weights as the first pass
        runs[graphed] = [p.detach().float().cpu() for p in model.parameters()]
        assert (opts.graph is not None) == graphed
    for eager, replayed in zip(runs[False], runs[True]):
        assert torch.allclose(eager, replayed, atol=1e-5, rtol=1e-4)
