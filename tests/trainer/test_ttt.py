import pytest
import torch

from trainer import sliding, ttt
from tinylm import byte_table, markov_tokens, tiny_model
from trainer_support import two_gloo_ranks

SETTINGS = dict(seq_len=32, stride=8, batch_windows=4, chunk_tokens=64, epochs=2, lr=0.05,
                momentum=0.9, grad_clip=1.0, batch_seqs=2)


def _run(tokens, trace=None, lines=None, **overrides):
    model = tiny_model()
    args = {**SETTINGS, **overrides}
    out = ttt.eval_ttt(model, tokens, byte_table(), log=(lines.append if lines is not None else
                                                         lambda s: None), trace=trace, **args)
    return out, model


def test_chunks_and_cosine_schedule():
    assert ttt.chunk_bounds(130, 64) == [(0, 64), (64, 128), (128, 130)]
    assert ttt.cosine_lr(0.1, 0, 5) == 0.1 and ttt.cosine_lr(0.1, 4, 5) == pytest.approx(0.0)
    assert ttt.cosine_lr(0.1, 2, 5) == pytest.approx(0.05)


def test_first_chunk_is_scored_by_the_unadapted_model_and_the_last_is_never_trained():
    tokens = markov_tokens(321)
    trace, lines = sliding.Trace.for_stream(321), []
    _run(tokens, trace, lines)
    plain = sliding.Trace.for_stream(321)
    sliding.eval_stream(tiny_model(), tokens, byte_table(), seq_len=32, stride=8, batch_windows=4,
                        trace=plain)
    assert torch.equal(trace.nll[:64], plain.nll[:64])  # nothing learned before chunk 1 is scored
    assert not torch.equal(trace.nll[64:], plain.nll[64:])  # later chunks see adapted weights
    trains = [(lo, hi) for kind, lo, hi in trace.events if kind == "train"]
    assert len(trains) == len(ttt.chunk_bounds(320, 64)) - 1 and trains[-1][1] <= 256
    assert (trace.times_scored == 1).all()
    assert lines[0].startswith("ttt:start chunks=5 ") and lines[-1].startswith("ttt:chunk 5/5 ")


def test_ttt_lowers_the_loss_on_a_learnable_stream():
    tokens = markov_tokens(1025)
    (ttt_loss, _), _ = _run(tokens, chunk_tokens=128, epochs=3, lr=0.1)
    plain_loss, _ = sliding.eval_stream(tiny_model(), tokens, byte_table(), seq_len=32, stride=8,
                                        batch_windows=4)
    assert ttt_loss < plain_loss - 0.1


def test_zero_epochs_is_the_sliding_evaluation():
    tokens = markov_tokens(321)
    (loss, bpb), _ = _run(tokens, epochs=0)
    assert (loss, bpb) == pytest.approx(sliding.eval_stream(
        tiny_model(), tokens, byte_table(), seq_len=32, stride=8, batch_windows=4), rel=1e-9)


def test_a_compiled_model_is_accepted_and_changes_nothing():
    """The run loop passes a torch.compile'd scoring entry point, which TTT must call as it is
    (`is None`, not `or`: a compiled module raised on its truth value in the GPU run). Same
    losses as the plain model."""
    tokens = markov_tokens(193)
    model = tiny_model()
    compiled = ttt.eval_ttt(model, tokens, byte_table(), log=lambda s: None,
                            logits_fn=torch.compile(model.forward_logits, backend="eager"),
                            **SETTINGS)
    assert compiled == pytest.approx(_run(tokens)[0], rel=1e-5)


def _two_rank_work():
    tokens = markov_tokens(321)
    plain = sliding.eval_stream(tiny_model(), tokens, byte_table(), seq_len=32, stride=8,
                                batch_windows=4)
    (loss, bpb), model = _run(tokens, batch_seqs=3)
    return plain, (loss, bpb), model.tok_emb.weight.sum().item()


@pytest.mark.slow
def test_two_ranks_agree_with_one(tmp_path):
    results = two_gloo_ranks(_two_rank_work, tmp_path)
    tokens = markov_tokens(321)
    plain = sliding.eval_stream(tiny_model(), tokens, byte_table(), seq_len=32, stride=8,
                                batch_windows=4)
    (loss, bpb), model = _run(tokens, batch_seqs=3)
    for r_plain, r_ttt, emb_sum in results:
        assert r_plain == pytest.approx(plain, rel=1e-9)
        assert r_ttt == pytest.approx((loss, bpb), rel=1e-4)
        assert emb_sum == pytest.approx(model.tok_emb.weight.sum().item(), rel=1e-4, abs=1e-4)
    assert results[0][1] == results[1][1]  # every rank reports the same all-reduced figure
