import dataclasses
import functools

import pytest
import torch
import torch.nn as nn

from trainer.config import load_config
from trainer.errors import TrainerError
from trainer.model import GPT, Rotary, layer_order
from trainer.qk_rope import apply_rope
from trainer.shards import BOS_ID
from trainer.xsa import exclusive_self_attention

TINY = load_config({"PRESET": "tiny"})


def _trained_like(cfg, seed=0):
    """A model whose zero-initialized projections are filled in, so every path matters."""
    torch.manual_seed(seed)
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("preset, params", [("record", 35_944_536), ("baseline", 17_059_912)])
def test_parameter_count_matches_the_records_logs(preset, params):
    cfg = dataclasses.replace(load_config({"PRESET": preset}), ortho_init=False)  # faster init
    assert sum(p.numel() for p in GPT(cfg).parameters()) == params


def test_state_dict_names_are_the_records():
    names = set(GPT(TINY).state_dict())
    for i in range(TINY.num_layers):
        for part in ("attn.c_q", "attn.c_k", "attn.c_v", "attn.proj", "mlp.fc", "mlp.proj"):
            assert f"blocks.{i}.{part}.weight" in names
        for part in ("attn.q_gain", "attn_scale", "mlp_scale", "resid_mix"):
            assert f"blocks.{i}.{part}" in names
    assert {"tok_emb.weight", "skip_weights", "skip_gates"} <= names
    model = GPT(TINY)
    assert isinstance(model.final_norm, nn.Module) and model.lm_head is None
    block_matrices = [m for m in model.blocks.modules() if isinstance(m, nn.Linear)]
    assert len(block_matrices) == 6 * TINY.num_layers


def test_layer_order_is_the_records():
    cfg = load_config({})
    assert layer_order(cfg, looping=True) == ([0, 1, 2, 3, 4, 5, 3, 4], [5, 3, 4, 5, 6, 7, 8, 9, 10])
    assert layer_order(cfg, looping=False) == ([0, 1, 2, 3, 4], [5, 6, 7, 8, 9, 10])


def test_outputs():
    model = _trained_like(TINY)
    x = torch.randint(0, 1024, (2, 32))
    logits = model.forward_logits(x)
    assert logits.shape == (2, 32, 1024) and logits.dtype == torch.float32
    assert logits.abs().max() <= TINY.logit_softcap
    loss = model(x, torch.roll(x, -1, 1))
    expected = nn.functional.cross_entropy(logits.reshape(-1, 1024), torch.roll(x, -1, 1).reshape(-1))
    assert torch.allclose(loss, expected)


def test_untrained_model_predicts_uniformly():
    """Zero-initialized output projections and a small embedding: loss starts at ln(V)."""
    x, y = torch.randint(0, 1024, (2, 2, 64))
    assert abs(GPT(TINY)(x, y).item() - torch.log(torch.tensor(1024.0)).item()) < 0.02


@pytest.mark.parametrize("looping", [False, True])
@pytest.mark.parametrize("lanes", [False, True])
def test_causal(looping, lanes):
    model = _trained_like(dataclasses.replace(TINY, parallel_lanes=lanes))
    model.looping_active = looping
    x = torch.randint(0, 1024, (1, 48))
    changed = x.clone()
    changed[0, 30:] = (changed[0, 30:] + 7) % 1024
    a, b = model.forward_logits(x), model.forward_logits(changed)
    assert torch.allclose(a[:, :30], b[:, :30], atol=1e-5)
    assert not torch.allclose(a[:, 30:], b[:, 30:])


def test_looping_runs_the_loop_layers_again():
    model = _trained_like(TINY)
    x = torch.randint(0, 1024, (1, 16))
    plain = model.forward_logits(x)
    model.looping_active = True
    assert not torch.allclose(plain, model.forward_logits(x))


@pytest.mark.parametrize("switch", [
    {"xsa_last_n": 0}, {"ln_scale": False}, {"skip_gates_enabled": False}, {"num_loops": 0},
    {"parallel_residual_start": -1}, {"rope_dims": 0}, {"leaky_relu_slope": 0.0},
    {"tie_embeddings": False}, {"ortho_init": False}, {"num_kv_heads": 4}, {"parallel_lanes": True},
])
def test_every_component_switches(switch):
    cfg = dataclasses.replace(TINY, **switch)
    base, other = _trained_like(TINY), _trained_like(cfg)
    x = torch.randint(0, 1024, (1, 16))
    for m in (base, other):
        m.looping_active = True
    assert other(x, x).isfinite()
    if switch != {"ortho_init": False}:  # same init apart from the switch gives other outputs
        assert not torch.allclose(base.forward_logits(x), other.forward_logits(x))


def test_two_lanes_that_never_part_are_the_single_parallel_stream():
    """PARALLEL_LANES wired as PR #1855: with each lane keeping all of itself and taking all of
    both outputs, attention reading its lane unmixed with x0, and no skip into the parallel
    layers (ungated: a gate scales the attention lane alone), the two lanes stay equal and the
    model is the GPT-J parallel one; the lanes' weights then move the output and learn."""
    cfg = dataclasses.replace(TINY, skip_gates_enabled=False)
    lanes, single = _trained_like(dataclasses.replace(cfg, parallel_lanes=True)), GPT(cfg)
    decoder = lanes.plain_indices[1]
    with torch.no_grad():
        lanes.lane_resid.fill_(1.0)
        lanes.lane_post.fill_(1.0)
        for j, i in enumerate(decoder):
            if i >= cfg.parallel_residual_start:
                lanes.blocks[i].resid_mix.copy_(torch.stack((torch.ones(64), torch.zeros(64))))
                lanes.skip_weights[j] = 0.0
    single.load_state_dict({k: v for k, v in lanes.state_dict().items() if not k.startswith("lane_")})
    x = torch.randint(0, 1024, (2, 24))
    assert torch.allclose(lanes.forward_logits(x), single.forward_logits(x), atol=1e-5)
    with torch.no_grad():
        lanes.lane_post[decoder[-1], 1, 0] = 0.5  # less of the last MLP output in the attention lane
    assert not torch.allclose(lanes.forward_logits(x), single.forward_logits(x), atol=1e-3)
    lanes(x, x).backward()
    assert lanes.lane_resid.grad.abs().sum() > 0 and lanes.lane_post.grad.abs().sum() > 0


def test_each_output_reaches_the_lanes_its_weights_say():
    """post[0, k] weighs the attention's output into lane k, post[1, k] the MLP's: with the
    attention writing lane 0 only, changing the attention moves lane 0 alone, and the MLP's
    input is the MLP lane."""
    model = _trained_like(dataclasses.replace(TINY, parallel_lanes=True))
    block = model.blocks[-1]
    rope = model.rotary(8, torch.device("cpu"))
    attn_lane, mlp_lane, x0 = torch.randn(3, 2, 8, 64)
    post = torch.tensor([[1.0, 0.0], [1.0, 1.0]])

    def run():
        return block.forward_lanes(attn_lane, mlp_lane, x0, rope, None, None, torch.ones(2), post)
    before = run()
    with torch.no_grad():
        block.attn.proj.weight.mul_(2.0)
    after = run()
    assert torch.equal(before[1], after[1]) and not torch.allclose(before[0], after[0])
    mlp_out = block.mlp_scale * block.mlp(block.mlp_norm(mlp_lane) * block.ln_scale_factor)
    assert torch.allclose(after[1], mlp_lane + mlp_out, atol=1e-6)


def _block_by_its_modules(block, x, x0, rope):
    """Block.forward's formula through its modules, the residual adds as their own ops."""
    mix, ln = block.resid_mix, block.ln_scale_factor
    x = mix[0] * x + mix[1] * x0
    y = x + block.attn_scale * block.attn(block.attn_norm(x) * ln, rope, None)
    mlp_in = x if block.parallel else y
    return y + block.mlp_scale * block.mlp(block.mlp_norm(mlp_in) * ln)


@pytest.mark.parametrize("layer", [1, 5])  # sequential; parallel (PARALLEL_RESIDUAL_START=4)
def test_residual_adds_folded_into_the_projections_are_the_same_block(layer):
    """With gradients on, a block adds each residual inside its projection's GEMM, the scale in
    the weight (model.scaled_residual): the same function and the same gradients as its
    modules' formula; without gradients (scoring's path) the output is the same."""
    model = _trained_like(TINY).double()
    block = model.blocks[layer]
    assert block.parallel == (layer >= TINY.parallel_residual_start)
    rope = model.rotary(12, torch.device("cpu"))
    x, x0, grad = torch.randn(3, 2, 12, 64, dtype=torch.float64)
    outputs = []
    for run in (block, functools.partial(_block_by_its_modules, block)):
        block.zero_grad()
        leaves = [t.clone().requires_grad_() for t in (x, x0)]
        out = run(*leaves, rope)
        out.backward(grad)
        outputs.append([out.detach(), *(t.grad for t in leaves),
                        *(p.grad.clone() for p in block.parameters())])
    for folded, plain in zip(*outputs):
        assert torch.allclose(folded, plain, rtol=1e-10, atol=1e-12)
    with torch.no_grad():
        assert torch.allclose(block(x, x0, rope), outputs[1][0], rtol=1e-10, atol=1e-12)


def test_folded_residual_adds_are_as_accurate_in_bf16():
    """Folding rounds otherwise (the sum once in the GEMM, the scale into the weight): under
    bf16 autocast the block's output and gradients are as close to fp64 as its modules'
    formula is (medians over the tensors, 10% slack)."""
    model = _trained_like(TINY)
    block = model.blocks[1]
    rope = model.rotary(64, torch.device("cpu"))
    x, x0, grad = torch.randn(3, 4, 64, 64)

    by_modules = functools.partial(_block_by_its_modules, block)

    def outputs(run, dtype, autocast):
        block.zero_grad()
        leaves = [t.to(dtype).requires_grad_() for t in (x, x0)]
        with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
            out = run(*leaves, rope)
        out.backward(grad.to(out.dtype))
        return [out.detach(), *(t.grad for t in leaves), *(p.grad.clone() for p in block.parameters())]

    block.double()
    exact = outputs(by_modules, torch.float64, False)
    block.float()
    folded, plain = outputs(block, torch.float32, True), outputs(by_modules, torch.float32, True)

    def median_error(values):
        errors = [((v.double() - e).norm() / e.norm()).item() for v, e in zip(values, exact)]
        return sorted(errors)[len(errors) // 2]
    assert median_error(folded) <= 1.1 * median_error(plain)
    assert median_error(plain) > 1e-3  # bf16 did round: the comparison means something


@pytest.mark.parametrize("start", ["-1", "3"])  # no parallel layer; one the loops run again
def test_two_lanes_need_parallel_layers_to_the_end(start):
    with pytest.raises(TrainerError, match=f"PARALLEL_LANES=1 needs PARALLEL_RESIDUAL_START={start} "
                                           "to name a layer after the looped ones"):
        load_config({"PRESET": "tiny", "PARALLEL_LANES": "1", "PARALLEL_RESIDUAL_START": start})


@pytest.mark.parametrize("looping", [False, True])
@pytest.mark.parametrize("lanes", [False, True])
def test_compiles_as_one_graph(looping, lanes):
    """No graph breaks: what `torch.compile(fullgraph=True)` needs on the GPU."""
    model = _trained_like(dataclasses.replace(TINY, parallel_lanes=lanes))
    model.looping_active = looping
    compiled = torch.compile(model, backend="eager", fullgraph=True, dynamic=False)
    x = torch.randint(0, 1024, (2, 16))
    assert torch.allclose(compiled(x, x), model(x, x))


def test_exclusive_self_attention_removes_the_own_value_direction():
    y, v = torch.randn(2, 5, 8, 16), torch.randn(2, 5, 4, 16)
    out = exclusive_self_attention(y, v)
    v_for_head = v.repeat_interleave(2, dim=2)  # query heads 2k and 2k+1 read KV head k
    assert torch.allclose((out * v_for_head).sum(-1), torch.zeros(2, 5, 8), atol=1e-5)


def test_rotary_tables_are_built_once_and_stretched_past_the_training_length():
    rotary = Rotary(rope_dims=16, base=10000.0, train_seq_len=64)
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float32) / 16)
    angles = torch.arange(64, dtype=torch.float32)[:, None] * inv_freq
    cos, sin = rotary(48, torch.device("cpu"))
    assert torch.equal(cos[0, :, 0], angles[:48].cos()) and torch.equal(sin[0, :, 0], angles[:48].sin())
    assert cos.data_ptr() == rotary.cos.data_ptr()  # a view of the table, not a new computation
    long_cos, _ = rotary(128, torch.device("cpu"))
    assert long_cos.shape == (1, 128, 1, 8)
    # NTK scaling lowers every frequency but the first, so late positions rotate more slowly.
    assert not torch.allclose(long_cos[0, 1:64, 0, 1:], rotary.cos[0, 1:, 0, 1:])
    assert "rotary.cos" not in GPT(TINY).state_dict()  # tables are rebuilt, never saved


@pytest.mark.parametrize("width", [1, 48, 64, 100, 128])
def test_rotary_tables_for_any_width_are_the_tables(width):
    """The formula's tables with the span given as a tensor (LoRA TTT's pass) are the tables,
    cached or stretched; a padded window's span is its tokens, not its padded width."""
    rotary, cpu = Rotary(rope_dims=16, base=10000.0, train_seq_len=64), torch.device("cpu")
    formula = rotary(width, cpu, span=torch.tensor(width))
    for got, want in zip(formula, rotary(width, cpu)):
        assert torch.equal(got, want)
    padded = rotary(width + 64, cpu, span=torch.tensor(width))
    for got, want in zip(padded, rotary(width, cpu)):
        assert torch.equal(got[:, :width], want)


def test_partial_rope_rotates_only_its_dims_and_keeps_norms():
    x = torch.randn(1, 10, 2, 16)
    t = torch.arange(10.0)[:, None] * torch.tensor([1.0, 0.1])
    cos, sin = t.cos()[None, :, None, :], t.sin()[None, :, None, :]
    out = apply_rope(x, cos, sin)
    assert torch.equal(out[..., 4:], x[..., 4:])
    assert torch.allclose(out.norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    assert torch.equal(out[:, 0], x[:, 0])  # position 0 is not rotated


@pytest.mark.parametrize("looping", [False, True])
def test_document_mask_keeps_each_document_to_itself(looping):
    """With DOC_MASK a document's logits are those it gets alone: no token reads another document
    (RoPE is relative, so the position in the window does not matter)."""
    model = _trained_like(dataclasses.replace(TINY, doc_mask=True))
    model.looping_active = looping
    gen = torch.Generator().manual_seed(3)
    first, second = (torch.randint(4, 1024, (1, n), generator=gen) for n in (20, 28))
    second[0, 0] = BOS_ID
    packed = model.forward_logits(torch.cat((first, second), 1))
    assert torch.allclose(packed[:, 20:], model.forward_logits(second), atol=1e-5)
    assert torch.allclose(packed[:, :20], model.forward_logits(first), atol=1e-5)
    model.doc_mask = False  # dense attention: the second document reads the first
    assert not torch.allclose(model.forward_logits(torch.cat((first, second), 1))[:, 20:],
                              model.forward_logits(second), atol=1e-3)


def test_document_mask_compiles_as_one_graph():
    model = _trained_like(dataclasses.replace(TINY, doc_mask=True))
    compiled = torch.compile(model, backend="eager", fullgraph=True, dynamic=False)
    x = torch.randint(4, 1024, (2, 16))
    x[0, 5] = x[1, 9] = BOS_ID
    assert torch.allclose(compiled(x, x), model(x, x))
