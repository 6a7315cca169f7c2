"""The causality probes pass pgolf's evaluation and catch each illegal shape they are meant for."""

import pytest
import torch
import torch.nn.functional as F

from trainer import compress, probe, quant, sliding, ttt
from trainer.files import write_atomic
from tinylm import VOCAB, Block, byte_table, config, tiny_model

N_TOKENS = 5 * 64 + 1  # five TTT chunks of 64 positions


def _tokens():
    return torch.randint(0, VOCAB, (N_TOKENS,), generator=torch.Generator().manual_seed(3))


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    q = quant.quantize_state_dict(tiny_model().state_dict(), {}, embeddings={"tok_emb.weight"},
                                  matrix_bits=6, embed_bits=8, matrix_clip_sigmas=12.85,
                                  embed_clip_sigmas=20.0)
    path = tmp_path_factory.mktemp("probe") / "model.pga"
    write_atomic(path, compress.compress_artifact(compress.pack_tensors(q), "lzma"))
    return path


def _failures(results):
    return {(r.condition, r.phase) for r in results if not r.ok}


def test_pgolf_evaluation_passes_every_probe(artifact):
    cfg = config()
    evaluate = probe.artifact_evaluation(cfg, tiny_model(), artifact, byte_table())
    results = probe.run_probes(evaluate, _tokens(), probe.PHASES, probe.probe_positions(cfg, N_TOKENS),
                               VOCAB)
    assert _failures(results) == set()
    assert {(r.condition, r.phase) for r in results} == {(c, p) for c in ("C1", "C3", "C4")
                                                         for p in probe.PHASES}


def _ttt_variant(adapt_first: bool, rescore: bool):
    """Score-first TTT rewritten the illegal ways: train on a chunk before scoring it (PRs #642,
    #991), or score everything a second time after adapting."""
    def evaluate(tokens, traces):
        model, trace = tiny_model(), traces["quantized_ttt"]
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        tally = sliding.Tally.zeros(tokens.device)
        kw = dict(seq_len=32, batch_windows=4, trace=trace)
        chunks = ttt.chunk_bounds(tokens.numel() - 1, 64)
        for lo, hi in chunks:
            if not adapt_first:
                sliding.score_segments(model.forward_logits, tokens, sliding.segments(lo, hi, 32, 8),
                                       tally, byte_table(), **kw)
            ttt.train_on_chunk(model, opt, tokens, lo, hi, seq_len=32, epochs=2, batch_seqs=2,
                               grad_clip=1.0, trace=trace)
            if adapt_first:
                sliding.score_segments(model.forward_logits, tokens, sliding.segments(lo, hi, 32, 8),
                                       tally, byte_table(), **kw)
        if rescore:
            everything = sliding.segments(0, tokens.numel() - 1, 32, 8)
            sliding.score_segments(model.forward_logits, tokens, everything, tally, byte_table(), **kw)
    return evaluate


def test_adapt_then_score_fails_c3_and_c1():
    failures = _failures(probe.run_probes(_ttt_variant(True, False), _tokens(), ["quantized_ttt"],
                                          [96, 129], VOCAB))
    assert {("C3", "quantized_ttt"), ("C1", "quantized_ttt"), ("C4", "quantized_ttt")} <= failures


def test_a_second_pass_fails_c4():
    results = probe.run_probes(_ttt_variant(False, True), _tokens(), ["quantized_ttt"], [96], VOCAB)
    c4 = [r for r in results if r.condition == "C4" and not r.ok]
    assert c4 and "not scored exactly once" in c4[0].detail


class Leaky(Block):
    """Attention without the causal mask: every position sees the whole window."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.out(F.relu(self.fc(self.mlp_norm(x))).square())


def test_a_model_that_sees_the_future_fails_c1():
    def evaluate(tokens, traces):
        model = tiny_model()
        model.blocks[0].__class__ = Leaky
        sliding.eval_stream(model, tokens, byte_table(), seq_len=32, stride=8, batch_windows=4,
                            trace=traces["quantized_sliding_window"])
    results = probe.run_probes(evaluate, _tokens(), ["quantized_sliding_window"], [100], VOCAB)
    failures = _failures(results)
    assert ("C1", "quantized_sliding_window") in failures


def test_on_the_trainer_model_ttt_adapts_so_the_probes_have_something_to_catch(tmp_path):
    """With the probe's settings, TTT changes the scores after the first chunk: a TTT loop that
    trained before scoring would show in C3."""
    from trainer.config import load_config
    from trainer.model import GPT
    cfg = load_config(env={}, overrides=probe.PROBE_SETTINGS)
    torch.manual_seed(0)
    model = GPT(cfg)
    for p in model.parameters():
        if p.ndim == 2:
            torch.nn.init.normal_(p, std=0.2)
    path = tmp_path / "m.pga"
    write_atomic(path, compress.compress_artifact(compress.pack_tensors(
        {k: v.clone() for k, v in model.state_dict().items()}), "lzma"))
    traces = {name: sliding.Trace.for_stream(probe.PROBE_TOKENS) for name in probe.PHASES}
    tokens = torch.randint(0, cfg.vocab_size, (probe.PROBE_TOKENS,),
                           generator=torch.Generator().manual_seed(1))
    probe.artifact_evaluation(cfg, model, path, lambda p, t, pos: torch.ones_like(t))(tokens, traces)
    slide, adapted = traces["quantized_sliding_window"].nll, traces["quantized_ttt"].nll
    assert torch.equal(slide[:64], adapted[:64]) and (slide[64:] - adapted[64:]).abs().max() > 1e-3


def test_a_trainer_model_that_attends_ahead_fails_c1(monkeypatch):
    import trainer.model

    def non_causal(q, k, v, backend, segments=None):  # (B, T, H, D) in and out, every position sees the window
        rep = q.size(2) // k.size(2)
        k, v = (t.repeat_interleave(rep, dim=2) for t in (k, v))
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return y.transpose(1, 2)

    monkeypatch.setattr(trainer.model, "causal_attention", non_causal)
    failures = _failures(probe.self_probe())
    assert {("C1", phase) for phase in probe.PHASES} <= failures


def test_pgolf_evaluation_with_the_frontier_modules_passes_every_probe():
    """SmearGate (documents packed with BOS in the probe's stream), the attention gate,
    LQER's corrected artifact, LoRA TTT and the n-gram tilt: every phase keeps C1, C3 and C4."""
    results = probe.self_probe(probe.switch_settings())
    assert len(results) == 21 and not _failures(results)
    assert probe.switch_settings() == {"SMEAR_GATE_ENABLED": "1", "SPARSE_ATTN_GATE_ENABLED": "1",
                                       "LQER_ENABLED": "1", "TTT_MODE": "lora",
                                       "NGRAM_TILT_ENABLED": "1"}
    assert probe.switch_settings({"lqer_enabled": False, "ttt_enabled": True,
                                  "ttt_mode": "sgd"}) == {"LQER_ENABLED": "0", "TTT_MODE": "sgd"}


def test_lora_ttt_with_sgd_phases_passes_every_probe_and_adapts():
    """Per-document LoRA TTT (probe scale: 40-token documents, 8-position chunks, SGD phases
    after documents 0-1 and 2-3): C1, C3, C4 hold; and at these settings the adapters and the
    phases do change the scores (against a run with neither), so the probes have something to
    catch."""
    assert not _failures(probe.self_probe({"TTT_MODE": "lora"}))
    from trainer.config import load_config
    tokens = torch.randint(0, 1024, (probe.PROBE_TOKENS,), generator=torch.Generator().manual_seed(1))
    tokens[::probe.DOCUMENT_TOKENS] = 1
    nll = []
    for frozen in ({}, {"TTT_LORA_LR": "0", "TTT_PHASES": "0"}):
        cfg = load_config(env={}, overrides={**probe.PROBE_SETTINGS, "TTT_MODE": "lora", **frozen})
        traces = {name: sliding.Trace.for_stream(probe.PROBE_TOKENS) for name in probe.PHASES}
        _trainer_evaluation(cfg, tokens, traces)
        nll.append(traces["quantized_ttt"].nll)
    adapted, frozen = nll
    assert torch.equal(adapted[:8], frozen[:8])  # the first chunk: nothing learned yet
    assert (adapted[8:40] - frozen[8:40]).abs().max() > 1e-3  # the adapters, in document 0
    assert (adapted[80:] - frozen[80:]).abs().max() > 1e-3


def _trainer_evaluation(cfg, tokens, traces):
    """pgolf's evaluation of the trainer's model at `cfg`, random weights, unquantized."""
    import tempfile
    from pathlib import Path
    from trainer.model import GPT
    torch.manual_seed(0)
    model = GPT(cfg)
    for p in model.parameters():
        if p.ndim == 2:
            torch.nn.init.normal_(p, std=0.2)
    model.looping_active = True
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.pga"
        write_atomic(path, compress.compress_artifact(compress.pack_tensors(
            {k: v.clone() for k, v in model.state_dict().items()}), "lzma"))
        probe.artifact_evaluation(cfg, model, path, lambda p, t, pos: torch.ones_like(t))(tokens, traces)


@pytest.mark.slow
def test_lora_adapters_trained_before_scoring_fail_c3(monkeypatch):
    """Each batch of documents adapted on all its chunks first, then scored with those adapters
    (adapt-then-score, per document)."""
    from trainer import doc_ttt
    real = doc_ttt.adapt_batch

    def adapt_then_score(model, adapters, tokens, docs, tally, target_bytes, **kw):
        real(model, adapters, tokens, docs, sliding.Tally.zeros(tokens.device), target_bytes,
             **{**kw, "trace": None})
        adapters.reset = lambda: None  # keep what the first pass learned
        real(model, adapters, tokens, docs, tally, target_bytes, **kw)
        del adapters.reset

    monkeypatch.setattr(doc_ttt, "adapt_batch", adapt_then_score)
    assert ("C3", "quantized_ttt") in _failures(probe.self_probe({"TTT_MODE": "lora"}))


def test_an_sgd_phase_on_the_whole_stream_fails_c1_and_c4(monkeypatch):
    """The global SGD run on every position, scored or not, after the first group."""
    from trainer import doc_ttt
    real = doc_ttt.sgd_phase

    def whole_stream(model, tokens, hi, **kw):
        real(model, tokens, tokens.numel() - 1, **kw)

    monkeypatch.setattr(doc_ttt, "sgd_phase", whole_stream)
    failures = _failures(probe.self_probe({"TTT_MODE": "lora"}))
    assert {("C1", "quantized_ttt"), ("C4", "quantized_ttt")} <= failures


def test_a_smear_that_reads_the_next_token_fails_c3(monkeypatch):
    """The probes see through the gates: SmearGate mixing x_{t+1} instead of x_{t-1} lets the
    distribution that scores target t read x_t itself."""
    import trainer.gates

    def ahead(self, x, input_ids):
        return torch.cat((x[:, :-1] + self.lam * x[:, 1:], x[:, -1:]), dim=1)

    monkeypatch.setattr(trainer.gates.SmearGate, "forward", ahead)
    failures = _failures(probe.self_probe({"SMEAR_GATE_ENABLED": "1"}))
    assert {("C3", phase) for phase in probe.PHASES} <= failures
