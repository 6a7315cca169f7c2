import dataclasses

import torch

from trainer import compress, lqer, quant
from trainer.artifact import quantization_settings
from trainer.config import load_config
from trainer.files import write_atomic
from trainer.model import GPT
from trainer.scoring import _load

TINY = load_config({"PRESET": "tiny"})


def _model(seed=0):
    torch.manual_seed(seed)
    model = GPT(TINY)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(std=0.1)
    return model


def _quantized(state, bits=3):
    # Few bits and a small passthrough size, so the tiny model has large errors to correct.
    return quant.quantize_state_dict(state, {}, embeddings={"tok_emb.weight"}, matrix_bits=bits,
                                     embed_bits=bits, matrix_clip_sigmas=4.0, embed_clip_sigmas=4.0,
                                     passthrough_max_numel=1024)


def test_factors_are_stored_in_their_asymmetric_ranges():
    w = torch.randn(96, 128)
    qt = quant.quantize_rtn(w, 4.0, 3)
    out = lqer.corrections({"w": w}, {"w": qt}, rank=4, top_k=1, group=64)
    a, a_scale, b, b_scale = (out["w" + s] for s in lqer.SUFFIXES)
    assert a.shape == (96, 4) and b.shape == (4, 128)
    assert a.dtype == b.dtype == torch.int8 and a_scale.dtype == b_scale.dtype == torch.float16
    assert -2 <= a.min() and a.max() <= 1 and -8 <= b.min() and b.max() <= 7
    assert a_scale.shape == () and b_scale.shape == (4 * 128 // 64,)


def test_the_correction_shrinks_the_error_of_the_worst_matrices_only():
    state = _model().state_dict()
    q = _quantized(state)
    out = lqer.corrections(state, q, rank=4, top_k=3, group=16)
    corrected = {n[:-len(".lqer_a")] for n in out if n.endswith(".lqer_a")}
    errors = {n: float((state[n] - quant.dequantize(v)).norm()) for n, v in q.items()
              if isinstance(v, quant.QTensor)}
    assert corrected == set(sorted(errors, key=errors.get, reverse=True)[:3])
    folded = lqer.fold_corrections({**quant.dequantize_state_dict(q), **out})
    assert set(folded) == set(state)
    for name in corrected:
        assert float((state[name] - folded[name]).norm()) < errors[name]
    untouched = next(n for n in errors if n not in corrected)
    assert torch.equal(folded[untouched], quant.dequantize(q[untouched]))


def test_a_group_that_does_not_divide_a_row_takes_the_row():
    b, scale = lqer._quantize_b(torch.randn(4, 48), group=64)
    assert scale.shape == (4,) and b.shape == (4, 48)


def test_corrections_survive_the_artifact_and_load_into_the_model(tmp_path):
    """Written into the container, compressed, read back by the evaluation's loader: the model
    gets W_hat + A @ B under its own names."""
    model = _model()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    q = _quantized(state)
    factors = lqer.corrections(state, q, rank=2, top_k=2, group=16)
    path = tmp_path / "m.pga"
    write_atomic(path, compress.compress_artifact(compress.pack_tensors({**q, **factors}),
                                                           "lzma"))
    _load(dataclasses.replace(TINY, lqer_enabled=True), model, path)
    expected = lqer.fold_corrections({**quant.dequantize_state_dict(q), **factors})
    for name, tensor in model.state_dict().items():
        assert torch.allclose(tensor, expected[name].to(tensor.dtype)), name


def test_lqer_setting_logs_what_it_corrected():
    cfg = dataclasses.replace(TINY, lqer_enabled=True, lqer_top_k=1)
    state = _model().state_dict()
    lines = []
    out = lqer.lqer_corrections(cfg, state, _quantized(state), lines.append)
    assert len(out) == 4 and lines[0].startswith("lqer:rank 4 corrections of ")


def test_clip_groups_follow_the_settings():
    """MLP_CLIP_SIGMAS and ATTN_CLIP_SIGMAS reach the matrices of their modules only; unset,
    every block matrix keeps MATRIX_CLIP_SIGMAS (the record's quantization, unchanged)."""
    state = _model().state_dict()
    record = quantization_settings(TINY)
    assert record["group_clip_sigmas"] == {}
    cfg = dataclasses.replace(TINY, mlp_clip_sigmas=2.0, attn_clip_sigmas=30.0)
    grouped = quant.quantize_state_dict(state, {}, embeddings={"tok_emb.weight"},
                                        passthrough_max_numel=1024, **quantization_settings(cfg))
    plain = quant.quantize_state_dict(state, {}, embeddings={"tok_emb.weight"},
                                      passthrough_max_numel=1024, **record)
    for name in ("blocks.0.mlp.fc.weight", "blocks.0.attn.c_q.weight", "tok_emb.weight"):
        sigmas = {"mlp": 2.0, "attn": 30.0}.get(name.split(".")[2] if "blocks" in name else "",
                                                 TINY.embed_clip_sigmas)
        bits = TINY.embed_bits if name == "tok_emb.weight" else TINY.matrix_bits
        assert torch.equal(grouped[name].scale, quant.sdclip_scale(state[name], sigmas, bits)), name
    assert torch.equal(plain["blocks.0.mlp.fc.weight"].scale,
                       quant.sdclip_scale(state["blocks.0.mlp.fc.weight"], TINY.matrix_clip_sigmas,
                                          TINY.matrix_bits))
