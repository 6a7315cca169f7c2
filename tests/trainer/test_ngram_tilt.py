"""The n-gram tilt of scored distributions (trainer/ngram_tilt.py): what its table holds, that
what it scores is a distribution over the whole vocabulary, and that a token's score reads only
earlier tokens, in every scoring phase."""

import math

import pytest
import torch
import torch.nn.functional as F

from tinylm import VOCAB, byte_table, tiny_model
from trainer_support import two_gloo_ranks
from trainer import doc_ttt, probe, sliding
from trainer.compress import compress_artifact, pack_tensors
from trainer.config import load_config
from trainer.files import write_atomic
from trainer.model import GPT
from trainer.ngram_tilt import NgramTilt
from trainer.shards import BOS_ID

CPU = torch.device("cpu")


def _repeating(n: int, period: int, seed: int = 0, vocab: int = VOCAB) -> torch.Tensor:
    """A stream that repeats one random stretch of `period` tokens."""
    pattern = torch.randint(0, vocab, (period,), generator=torch.Generator().manual_seed(seed))
    return pattern[torch.arange(n) % period]


def test_the_table_hints_the_most_frequent_next_token_past_the_threshold():
    # Position p's context is tokens p-1, p (order 3). Context (5, 6) is followed by 7 twice and
    # by 8 once; context (6, 7) by 5 every time; (1, 2) by 3 and 4 once each.
    tokens = torch.tensor([5, 6, 7, 5, 6, 7, 5, 6, 8, 0, 1, 2, 3, 1, 2, 4, 5, 6])
    tilt = NgramTilt(order=3, threshold=0.6, boost=2.0, device=CPU)
    hint, boost = tilt.hints(tokens, torch.arange(17))
    assert (boost == 0).all()  # nothing scored yet
    tilt.observe(tokens, torch.arange(16))  # positions 0..15, each with the token after it
    hint, boost = tilt.hints(tokens, torch.tensor([17, 2, 14, 0]))
    assert hint[:3].tolist() == [7, 5, 3] and boost.tolist() == [2.0, 2.0, 0.0, 0.0]
    # (5, 6): 2 of 3 >= 0.6; (6, 7): 2 of 2; (1, 2): a tie, the lowest id, 1 of 2 < 0.6;
    # position 0 has no full context.
    strict = NgramTilt(order=3, threshold=0.7, boost=2.0, device=CPU)
    strict.observe(tokens, torch.arange(16))
    assert strict.hints(tokens, torch.tensor([17]))[1].tolist() == [0.0]  # 2 of 3 < 0.7


def test_the_tilted_distribution_sums_to_one_at_every_position():
    """The scored loss, as tilted_nll computes it for each possible target, is -log of a
    distribution over the whole vocabulary: its probabilities sum to 1 at every position, tilted
    or not, and it is the softmax of the tilted logits."""
    tokens = _repeating(200, 13)
    tilt = NgramTilt(order=4, threshold=0.8, boost=2.625, device=CPU)
    tilt.observe(tokens, torch.arange(100))
    last = torch.arange(100, 160).view(3, 20)
    hint, boost = tilt.hints(tokens, last)
    assert (boost > 0).all()  # every context was seen: the tilt is on everywhere here
    boost[0, :5] = 0.0  # and off at a few positions
    logits = torch.randn(3, 20, VOCAB, generator=torch.Generator().manual_seed(0)) * 3
    every = torch.arange(VOCAB).expand(3, 20, VOCAB)  # each token of the vocabulary as the target
    nll = -torch.log_softmax(logits, -1)
    tilted = NgramTilt.tilted_nll(logits[..., None, :].expand(3, 20, VOCAB, VOCAB), every,
                                  hint[..., None].expand_as(every), boost[..., None].expand_as(every))
    total = tilted.double().neg().exp().sum(-1)
    assert torch.allclose(total, torch.ones_like(total), atol=1e-5)
    want = -torch.log_softmax(NgramTilt.tilted_logits(logits, hint, boost), -1)
    assert torch.allclose(tilted, want, atol=1e-5)
    assert torch.allclose(tilted[0, :5], nll[0, :5], atol=1e-5)  # untilted where the gate is shut
    assert not torch.allclose(tilted[1:], nll[1:], atol=1e-2)


def _phases(tilt_of):
    """eval_stream on windows (stride 32) and sliding windows (stride 8), each phase with the
    n-gram tilt `tilt_of()` gives, as the probes call an evaluation."""
    def evaluate(tokens, traces):
        for name, stride in (("quantized", 32), ("quantized_sliding_window", 8)):
            sliding.eval_stream(tiny_model(), tokens, byte_table(), seq_len=32, stride=stride,
                                batch_windows=4, trace=traces[name], tilt=tilt_of())
    return evaluate


STREAM_PHASES = ["quantized", "quantized_sliding_window"]
POSITIONS = [150, 203, 290]  # none at a segment's end; each scored after a full table


def _tilt():
    return NgramTilt(order=4, threshold=0.8, boost=2.625, device=CPU)


def test_a_tilted_score_reads_only_earlier_tokens():
    """C1 and C3 on a repeating stream where the tilt is on at every probed position: tokens
    after t replaced leave the scores up to target t as they were; token t replaced leaves the
    distribution that scores target t as it was, and the logged loss is read from it; every
    position scored once."""
    tokens = _repeating(321, 23, seed=4)
    results = probe.run_probes(_phases(_tilt), tokens, STREAM_PHASES, POSITIONS, VOCAB)
    assert {(r.condition, r.phase) for r in results} == {
        (c, p) for c in ("C1", "C3", "C4") for p in STREAM_PHASES}
    assert all(r.ok for r in results), [r.detail for r in results if not r.ok]
    plain, tilted = ({name: sliding.Trace.for_stream(321) for name in STREAM_PHASES} for _ in range(2))
    _phases(lambda: None)(tokens, plain)
    _phases(_tilt)(tokens, tilted)
    for name in STREAM_PHASES:  # the tilt does move the probed targets' scores
        moved = (plain[name].nll - tilted[name].nll).abs()
        assert (moved[[t - 1 for t in POSITIONS]] > 1e-3).all()


class _Peeking(NgramTilt):
    """A tilt whose table takes the batch before it is scored."""

    def hints(self, tokens, last):
        self.observe(tokens, last.flatten().clamp(max=tokens.numel() - 2))
        return super().hints(tokens, last)


def test_a_table_that_takes_the_batch_before_scoring_it_fails_c3():
    """On random tokens no context repeats, so whatever the table knows of a batch it learned
    from the batch itself: the hint at t-1 is then x_t."""
    tokens = torch.randint(0, VOCAB, (321,), generator=torch.Generator().manual_seed(5))
    results = probe.run_probes(_phases(lambda: _Peeking(4, 0.8, 2.625, CPU)), tokens,
                               STREAM_PHASES, POSITIONS, VOCAB)
    assert {(r.condition, r.phase) for r in results if not r.ok} >= {
        ("C3", p) for p in STREAM_PHASES}


def test_the_tilt_lowers_the_loss_of_a_repeating_stream():
    """The model knows nothing of the repetition; the tilt's table does, once a batch has been
    scored: every phase's loss falls, and the first batch's scores are untouched."""
    tokens = _repeating(321, 23, seed=4)
    for stride in (32, 8):
        plain, tilted = sliding.Trace.for_stream(321), sliding.Trace.for_stream(321)
        a = sliding.eval_stream(tiny_model(), tokens, byte_table(), seq_len=32, stride=stride,
                                batch_windows=4, trace=plain)
        b = sliding.eval_stream(tiny_model(), tokens, byte_table(), seq_len=32, stride=stride,
                                batch_windows=4, trace=tilted, tilt=_tilt())
        assert b[0] < a[0] - 0.5 and b[1] < a[1]
        first = 128 if stride == 32 else 32 + 3 * 8  # the first batch's positions
        assert torch.equal(plain.nll[:first], tilted.nll[:first])
        assert math.isfinite(b[0])


def _evaluation(cfg, tokens, traces, tmp_path):
    """pgolf's evaluation (every phase) of the trainer's model at `cfg`, random weights, from
    an unquantized artifact."""
    torch.manual_seed(0)
    model = GPT(cfg)
    for p in model.parameters():
        if p.ndim == 2:
            torch.nn.init.normal_(p, std=0.2)
    model.looping_active = True
    path = tmp_path / "m.pga"
    write_atomic(path, compress_artifact(pack_tensors(
        {k: v.clone() for k, v in model.state_dict().items()}), "lzma"))
    probe.artifact_evaluation(cfg, model, path, lambda p, t, pos: torch.ones_like(t))(tokens, traces)


@pytest.mark.parametrize("ttt_mode", ["sgd", "lora"])
def test_every_phase_of_the_trainers_evaluation_passes_the_probes_tilted(ttt_mode, tmp_path):
    """pgolf's own evaluation (quantized artifact, every phase, TTT by whole-model SGD or by
    per-document LoRA with SGD phases) with the tilt on: C1, C3 and C4 hold in each phase, and
    the tilt is on at the last probed position of each (the probe's stream repeats its first
    documents), so the probes see tilted scores."""
    on = {"NGRAM_TILT_ENABLED": "1", "TTT_MODE": ttt_mode}
    results = probe.self_probe(on)
    assert len(results) == 21 and all(r.ok for r in results), [r.detail for r in results if not r.ok]
    tokens = probe.probe_tokens(1024)
    nll = []
    for tilt in ("0", "1"):
        cfg = load_config(env={}, overrides={**probe.PROBE_SETTINGS, **on, "NGRAM_TILT_ENABLED": tilt})
        traces = {name: sliding.Trace.for_stream(probe.PROBE_TOKENS) for name in probe.PHASES}
        _evaluation(cfg, tokens, traces, tmp_path)
        nll.append(traces)
    last = probe.probe_positions(cfg, probe.PROBE_TOKENS)[-1]
    for name in probe.PHASES:
        assert abs(nll[0][name].nll[last - 1] - nll[1][name].nll[last - 1]) > 1e-3, name


def test_a_tilt_that_peeks_fails_the_trainers_probes(monkeypatch):
    real = NgramTilt.hints

    def peeking(self, tokens, last):
        self.observe(tokens, last.flatten().clamp(max=tokens.numel() - 2))
        return real(self, tokens, last)

    monkeypatch.setattr(NgramTilt, "hints", peeking)
    failures = {(r.condition, r.phase) for r in probe.self_probe({"NGRAM_TILT_ENABLED": "1"})
                if not r.ok}
    assert ("C3", "quantized") in failures


def test_scores_without_the_tilt_are_unchanged():
    """tilted_nll with every boost 0 is the cross-entropy, bit for bit."""
    logits = torch.randn(2, 5, VOCAB, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, VOCAB, (2, 5), generator=torch.Generator().manual_seed(2))
    nll = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").view(2, 5)
    same = NgramTilt.tilted_nll(logits, y, torch.zeros_like(y), torch.zeros(2, 5))
    assert torch.equal(same, nll)


def _lora_ttt_scores(tilt: bool) -> tuple[float, float]:
    """LoRA TTT's score of the probe's stream (its second half repeats its first), with or
    without the tilt. The phases after documents 0-1 and 2-3 run (the tilt's table takes each
    group there) at a zero rate, and so do the adapters: two ranks would round the phases'
    summed gradients otherwise, and the comparison is of the tilt."""
    cfg = load_config(env={}, overrides={"PRESET": "tiny", "EVAL_SEQ_LEN": "32"})
    torch.manual_seed(0)
    model = GPT(cfg)
    for p in model.parameters():
        if p.ndim == 2:
            torch.nn.init.normal_(p, std=0.2)
    model.looping_active = True
    sgd = dict(chunk_tokens=64, epochs=1, lr=0.0, momentum=0.9, grad_clip=1.0, batch_seqs=2)
    return doc_ttt.eval_doc_ttt(model, probe.probe_tokens(1024), lambda p, t, pos: torch.ones_like(t),
                                seq_len=32, chunk=8, batch_docs=2, lora_rank=4, lr=0.0, phases=2,
                                phase_docs=4, sgd=sgd, log=lambda line: None,
                                tilt=NgramTilt(16, 0.8, 2.625, CPU) if tilt else None)


def _two_rank_lora_work():
    return _lora_ttt_scores(True)


@pytest.mark.slow
def test_lora_ttts_tilt_is_the_same_on_two_ranks_as_on_one(tmp_path):
    """Every rank's table takes each whole group, so the documents a rank was dealt do not
    matter: two gloo processes score exactly as one does, and the tilt does change the score."""
    one, plain = _lora_ttt_scores(True), _lora_ttt_scores(False)
    assert one[0] < plain[0] - 0.05
    assert two_gloo_ranks(_two_rank_lora_work, tmp_path) == [one, one]


def _self_repeating_documents() -> torch.Tensor:
    """Eight documents of 40 tokens, each BOS then a random stretch of 10 of its own, repeated."""
    gen = torch.Generator().manual_seed(6)
    tokens = torch.full((321,), BOS_ID)
    for d in range(8):
        tokens[40 * d + 1:40 * d + 40] = torch.randint(2, 1024, (10,), generator=gen)[torch.arange(39) % 10]
    return tokens


def _lora_ttt(tilt: bool):
    """LoRA TTT (adapters and SGD phases on) at probe scale, tilted or not, as the probes call an
    evaluation."""
    def evaluate(tokens, traces):
        cfg = load_config(env={}, overrides={"PRESET": "tiny", "EVAL_SEQ_LEN": "32"})
        torch.manual_seed(0)
        model = GPT(cfg)
        for p in model.parameters():
            if p.ndim == 2:
                torch.nn.init.normal_(p, std=0.2)
        model.looping_active = True
        sgd = dict(chunk_tokens=64, epochs=1, lr=0.05, momentum=0.9, grad_clip=1.0, batch_seqs=2)
        doc_ttt.eval_doc_ttt(model, tokens, lambda p, t, pos: torch.ones_like(t), seq_len=32,
                             chunk=8, batch_docs=3, lora_rank=4, lr=1e-2, phases=2, phase_docs=4,
                             sgd=sgd, log=lambda line: None, trace=traces["quantized_ttt"],
                             tilt=NgramTilt(16, 0.8, 2.625, CPU) if tilt else None)
    return evaluate


def test_lora_ttt_tilts_a_document_by_its_own_scored_chunks():
    """Documents that repeat themselves, in the first group (no table of earlier groups yet) as
    in the others: from the chunk after a context's first recurrence the document's own table
    tilts it; C1, C3 and C4 hold at targets where it does."""
    tokens, positions = _self_repeating_documents(), [70, 228, 313]
    results = probe.run_probes(_lora_ttt(True), tokens, ["quantized_ttt"], positions, 1024)
    assert all(r.ok for r in results) and len(results) == 7, [r.detail for r in results if not r.ok]
    plain, tilted = sliding.Trace.for_stream(321), sliding.Trace.for_stream(321)
    _lora_ttt(False)(tokens, {"quantized_ttt": plain})
    _lora_ttt(True)(tokens, {"quantized_ttt": tilted})
    moved = (plain.nll - tilted.nll).abs()
    assert (moved[[t - 1 for t in positions]] > 1e-3).all()
    assert torch.equal(plain.nll[:24], tilted.nll[:24])  # before any context recurs
    assert tilted.nll[24:40].mean() < plain.nll[24:40].mean() - 1.0
