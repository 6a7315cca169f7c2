import dataclasses

import pytest
import torch

from trainer.config import load_config
from trainer.gates import BOS_ID, HeadGate, SmearGate
from trainer.model import GPT
from trainer.optim import build_optimizers
from trainer.distributed import Dist

TINY = load_config({"PRESET": "tiny"})
GATED = dataclasses.replace(TINY, smear_gate_enabled=True, sparse_attn_gate_enabled=True)


def _smear(window=4, lam=0.7, seed=0):
    torch.manual_seed(seed)
    gate = SmearGate(window)
    with torch.no_grad():
        gate.weight.normal_()
        gate.lam.fill_(lam)
    return gate


def test_smear_adds_the_gated_previous_token():
    gate = _smear()
    ids = torch.tensor([[BOS_ID, 5, 6, 7]])
    x = torch.randn(1, 4, 8)
    out = gate(x, ids)
    g = 0.7 * torch.sigmoid(x[0, 2, :4] @ gate.weight[0])
    assert torch.allclose(out[0, 2], x[0, 2] + g * x[0, 1])
    assert torch.equal(out[0, 0], x[0, 0])  # the first position has no predecessor


def test_smear_never_crosses_a_document_start():
    """Two documents packed in one sequence: what the first holds never reaches the second."""
    gate = _smear()
    ids = torch.tensor([[BOS_ID, 9, 9, 9, BOS_ID, 4, 5, 6]])
    x = torch.randn(1, 8, 8)
    other = x.clone()
    other[:, :4] = torch.randn(1, 4, 8)  # a different first document
    a, b = gate(x, ids), gate(other, ids)
    assert torch.equal(a[:, 4:], b[:, 4:])
    assert torch.equal(a[0, 4], x[0, 4])  # the BOS keeps its own embedding
    assert not torch.equal(a[0, 5], x[0, 5])  # inside a document the smear is on
    # Without the mask the BOS would carry the last token of the previous document.
    unmasked = gate(x, torch.full_like(ids, 7))
    assert not torch.equal(unmasked[0, 4], x[0, 4])


def test_gated_model_keeps_documents_apart_at_the_embedding():
    """Through the whole model with the gates on: the smear is the only cross-token op before
    attention, so the first block's input for the second document ignores the first."""
    model = GPT(GATED)
    with torch.no_grad():
        model.smear_gate.lam.fill_(1.0)
        model.smear_gate.weight.normal_()
    seen = []
    handle = model.blocks[0].register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    ids = torch.tensor([[BOS_ID, 9, 9, 9, BOS_ID, 4, 5, 6]])
    other = ids.clone()
    other[0, 1:4] = torch.tensor([11, 12, 13])
    model.forward_logits(ids), model.forward_logits(other)
    handle.remove()
    assert torch.equal(seen[0][:, 4:], seen[1][:, 4:])
    assert not torch.equal(seen[0][:, 1:4], seen[1][:, 1:4])


def test_head_gate_scales_each_head_by_its_own_sigmoid():
    gate = HeadGate(num_heads=2, window=3, scale=0.5)
    with torch.no_grad():
        gate.weight.copy_(torch.tensor([[1.0, 0, 0], [0, -2.0, 0]]))
    x = torch.randn(1, 5, 8)
    y = torch.randn(1, 5, 2, 4)
    out = gate(y, x)
    for h, w in enumerate(gate.weight):
        g = torch.sigmoid(0.5 * (x[..., :3] @ w))
        assert torch.allclose(out[:, :, h], y[:, :, h] * g[..., None])


def test_gates_start_neutral_and_train_as_scalars():
    """Zero init: SmearGate off, every head gate 0.5 (the attention scale absorbs it); their
    weights go to AdamW with the other small parameters, not to Muon."""
    plain, gated = GPT(TINY), GPT(GATED)
    extra = set(gated.state_dict()) - set(plain.state_dict())
    assert extra == {"smear_gate.weight", "smear_gate.lam"} | {
        f"blocks.{i}.attn.head_gate.weight" for i in range(TINY.num_layers)}
    assert all(not gated.state_dict()[n].any() for n in extra)
    opts = build_optimizers(GATED, gated, Dist(rank=0, world_size=1, local_rank=0))
    muon_ids = {id(p) for group in opts.muon.param_groups for p in group["params"]}
    gate_params = [p for n, p in gated.named_parameters() if "gate" in n and "skip" not in n]
    assert gate_params and not muon_ids & {id(p) for p in gate_params}


def test_gates_learn():
    """From the zero init the smear's strength gets a gradient (its gate's weights follow once
    it is nonzero); the head gates get one as soon as the output projections do."""
    torch.manual_seed(0)
    model = GPT(GATED)
    ids = torch.randint(0, GATED.vocab_size, (2, 16))
    model(ids[:, :-1], ids[:, 1:]).backward()
    assert model.smear_gate.lam.grad.abs().item() > 0
    assert not model.smear_gate.weight.grad.any()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.proj.weight.normal_(std=0.1)
    model.zero_grad()
    model(ids[:, :-1], ids[:, 1:]).backward()
    assert all(b.attn.head_gate.weight.grad.abs().sum() > 0 for b in model.blocks)


@pytest.mark.parametrize("setting", ["smear_gate_enabled", "sparse_attn_gate_enabled"])
def test_gate_settings_change_the_model_only_when_on(setting):
    cfg = dataclasses.replace(TINY, **{setting: True})
    assert sum(p.numel() for p in GPT(cfg).parameters()) > sum(p.numel() for p in GPT(TINY).parameters())
