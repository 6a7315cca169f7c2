import pytest
import torch

from trainer import quant
from trainer.hessians import collect_hessians, hessian_targets
from tinylm import markov_tokens, tiny_model


def _weights(rows=96, cols=256, seed=0):
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, cols, generator=gen) * 0.02
    w[3, 7] = 0.5  # an outlier far beyond the clip
    return w


def _correlated_inputs(n=4096, cols=256, seed=1):
    """Activations with strongly correlated features, as real hidden states have."""
    gen = torch.Generator().manual_seed(seed)
    basis = torch.randn(16, cols, generator=gen)
    return torch.randn(n, 16, generator=gen) @ basis + 0.05 * torch.randn(n, cols, generator=gen)


@pytest.mark.parametrize("bits,sigmas", [(6, 12.85), (8, 20.0), (7, 3.0), (4, 2.5)])
def test_rtn_stays_within_the_analytic_bound(bits, sigmas):
    w = _weights()
    qt = quant.quantize_rtn(w, sigmas, bits)
    r = quant.level_range(bits)
    s = qt.scale.float()[:, None]
    assert qt.q.dtype == torch.int8 and int(qt.q.abs().max()) <= r
    assert torch.equal(qt.scale, quant.sdclip_scale(w, sigmas, bits))
    # Inside the clip the error is at most half a step; beyond it, the distance to the clip.
    bound = torch.maximum(s / 2, w.abs() - r * s)
    err = (w - quant.dequantize(qt)).abs()
    assert (err <= bound * (1 + 1e-6) + 1e-12).all()
    clipped = w.abs() > (r + 0.5) * s  # beyond the last level: stored exactly at the clip
    assert torch.allclose(quant.dequantize(qt).abs()[clipped], (r * s).expand_as(w)[clipped])


def test_gptq_with_identity_hessian_is_round_to_nearest():
    # No correlation between inputs: nothing to compensate, so GPTQ must equal RTN exactly.
    w = _weights()
    g = quant.quantize_gptq(w, torch.eye(w.shape[1]), 12.85, 6)
    r = quant.quantize_rtn(w, 12.85, 6)
    assert torch.equal(g.q, r.q) and torch.equal(g.scale, r.scale)


@pytest.mark.parametrize("bits,sigmas", [(6, 12.85), (4, 3.0)])
def test_gptq_output_error_is_lower_than_rtn_on_correlated_inputs(bits, sigmas):
    w, x = _weights(), _correlated_inputs()
    h = x.T @ x / len(x)
    out = x @ w.T

    def output_error(qt):
        return ((out - x @ quant.dequantize(qt).T).norm() / out.norm()).item()

    gptq, rtn = quant.quantize_gptq(w, h, sigmas, bits), quant.quantize_rtn(w, sigmas, bits)
    assert int(gptq.q.abs().max()) <= quant.level_range(bits)
    assert output_error(gptq) < 0.7 * output_error(rtn)


def _salient_inputs(n=4096, cols=256, seed=1):
    """Correlated inputs, except columns 64..127: independent and ten times louder, so GPTQ
    cannot hide their rounding in other columns."""
    x = _correlated_inputs(n, cols, seed)
    x[:, 64:128] = 10 * torch.randn(n, 64, generator=torch.Generator().manual_seed(seed + 1))
    return x


def test_awq_picks_the_loudest_group_and_quantizes_it_finer_inside_gptq():
    w, x, quiet = _weights(), _salient_inputs(), _correlated_inputs()
    h = x.T @ x / len(x)
    groups = quant.salient_groups({"w": w, "other": _weights(seed=3)},
                                  {"w": h, "other": quiet.T @ quiet / len(quiet)}, size=64, count=1)
    assert groups == {"w": [(64, 128)]}
    plain, fine = quant.quantize_gptq(w, h, 12.85, 6), quant.quantize_gptq(w, h, 12.85, 6, [(64, 128)], 8)
    assert fine.fine == [(64, 128)] and torch.equal(fine.fine_scale, quant.sdclip_scale(w, 12.85, 8))
    assert int(fine.q[:, 64:128].abs().max()) > quant.level_range(6)  # int8 levels in the group
    assert int(torch.cat((fine.q[:, :64], fine.q[:, 128:]), 1).abs().max()) <= quant.level_range(6)
    out = x @ w.T

    def output_error(qt):
        return ((out - x @ quant.dequantize(qt).T).norm() / out.norm()).item()

    assert output_error(fine) < 0.5 * output_error(plain)


def test_awq_groups_are_quantized_where_named():
    model = tiny_model()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    hessians = {name: torch.eye(state[name].shape[1]) for name in ("tok_emb.weight", "blocks.0.fc.weight")}
    q = quant.quantize_state_dict(state, hessians, embeddings={"tok_emb.weight"}, matrix_bits=6,
                                  embed_bits=8, matrix_clip_sigmas=12.85, embed_clip_sigmas=20.0,
                                  fine={"blocks.0.fc.weight": [(16, 32)]})
    assert q["tok_emb.weight"].fine == [] and q["blocks.0.fc.weight"].fine == [(16, 32)]
    assert q["blocks.0.fc.weight"].fine_scale is not None


def test_gptq_handles_dead_inputs_and_a_singular_hessian():
    w = _weights(cols=64)
    x = _correlated_inputs(n=8, cols=64)  # rank 8 < 64: singular before damping
    x[:, 5] = 0.0  # an input that never fires
    qt = quant.quantize_gptq(w, x.T @ x, 12.85, 6)
    assert torch.isfinite(quant.dequantize(qt)).all()
    assert int(qt.q[:, 5].abs().max()) == 0


def test_state_dict_routing_and_loadable_dequantization():
    model = tiny_model()
    state = {k: v.clone() for k, v in model.state_dict().items()}  # not views of the weights
    state["step"] = torch.tensor(7)  # a non-float buffer passes through unchanged
    hessians = {"blocks.0.qkv.weight": torch.eye(272)}
    q = quant.quantize_state_dict(state, hessians, embeddings={"tok_emb.weight"}, matrix_bits=6,
                                  embed_bits=8, matrix_clip_sigmas=12.85, embed_clip_sigmas=20.0)
    assert q["tok_emb.weight"].bits == 8 and q["blocks.0.fc.weight"].bits == 6
    assert q["blocks.0.qkv.weight"].method == "gptq" and q["blocks.1.qkv.weight"].method == "rtn"
    assert q["final_norm.weight"].dtype == torch.float16
    assert torch.equal(q["step"], torch.tensor(7))
    lines = quant.quantization_summary(q)
    assert any(line.startswith("  gptq int6: blocks.N.qkv.weight") for line in lines)
    del state["step"]
    deq = quant.dequantize_state_dict({k: v for k, v in q.items() if k != "step"})
    model.load_state_dict(deq, strict=True)
    assert torch.allclose(model.final_norm.weight, state["final_norm.weight"], atol=1e-3)
    # A round-to-nearest matrix is back within half an int6 level of each row's scale.
    w, back = state["blocks.0.fc.weight"], model.blocks[0].fc.weight.detach()
    half_level = quant.sdclip_scale(w, 12.85, 6).float()[:, None] / 2
    assert not torch.equal(back, w) and ((back - w).abs() <= half_level * 1.001).all()


def test_fp16_overflow_keeps_the_original_dtype():
    q = quant.quantize_state_dict({"big": torch.tensor([1e6, 1.0])}, {}, embeddings=set(),
                                  matrix_bits=6, embed_bits=8, matrix_clip_sigmas=12.85,
                                  embed_clip_sigmas=20.0)
    assert q["big"].dtype == torch.float32


def test_bits_out_of_range_are_refused():
    with pytest.raises(ValueError, match="bits must be 2..8"):
        quant.level_range(9)


def test_hessians_cover_every_quantized_matrix_and_stop_at_the_time_limit():
    model = tiny_model()
    tokens = markov_tokens(4 * 8 * 32 + 1)
    batches = iter(range(100))

    class Loader:
        def next_batch(self):
            i = next(batches) % 4
            x = tokens[i * 256:(i + 1) * 256].view(8, 32)
            return x, x

    targets = hessian_targets(model)
    assert set(targets) == {"tok_emb.weight"} | {f"blocks.{i}.{n}.weight" for i in range(2)
                                                 for n in ("qkv", "proj", "fc", "out")}
    hessians, count = collect_hessians(model, Loader(), max_batches=3, seconds=60.0)
    assert count == 3 and set(hessians) == set(targets)
    h = hessians["blocks.0.fc.weight"]
    assert h.shape == (272, 272) and torch.allclose(h, h.T) and (h.diagonal() > 0).all()
    none, zero = collect_hessians(model, Loader(), max_batches=3, seconds=0.0)
    assert none == {} and zero == 0
