import math

import pytest
import torch
import torch.nn.functional as F

from trainer import sliding
from trainer.ngram_tilt import NgramTilt
from trainer.scoring import SCORING_COMPILE
from trainer.shards import BOS_ID
from tinylm import byte_table, markov_tokens, tiny_model
from trainer_support import counted_compile


@pytest.mark.parametrize("lo,hi,seq_len,stride", [(0, 100, 32, 8), (0, 20, 32, 8), (64, 200, 32, 8),
                                                  (0, 97, 32, 32), (5, 6, 4, 1)])
def test_segments_cover_every_position_once_in_order(lo, hi, seq_len, stride):
    segs = sliding.segments(lo, hi, seq_len, stride)
    assert segs[0][0] == lo and segs[-1][1] == hi
    assert all(a[1] == b[0] for a, b in zip(segs, segs[1:]))
    first_cap = seq_len if lo == 0 else stride
    assert segs[0][1] - segs[0][0] <= first_cap
    assert all(0 < e - s <= stride for s, e in segs[1:])


def _reference(model, tokens, target_bytes, seq_len, stride):
    """The definition, one window at a time, unbatched and unpadded."""
    loss = nbytes = count = 0.0
    for s, e in sliding.segments(0, tokens.numel() - 1, seq_len, stride):
        a = max(0, e - seq_len)
        x, y = tokens[a:e][None], tokens[a + 1:e + 1][None]
        with torch.no_grad():
            nll = F.cross_entropy(model.forward_logits(x)[0], y[0], reduction="none")
        loss += nll[s - a:].double().sum().item()
        nbytes += target_bytes(x[0, s - a:], y[0, s - a:], torch.arange(s + 1, e + 1)).sum().item()
        count += e - s
    return loss / count, loss / count / math.log(2) * count / nbytes


def by_position(n_tokens: int):
    """Bytes by stream position, as a CaseOps byte sidecar gives them (0 to 5 per token)."""
    counts = torch.randint(0, 6, (n_tokens,), generator=torch.Generator().manual_seed(0))
    return lambda prev, tgt, target_pos: counts[target_pos]


@pytest.mark.parametrize("stride", [32, 8])
@pytest.mark.parametrize("bytes_of", ["table", "sidecar"])
def test_eval_matches_the_unbatched_definition(stride, bytes_of):
    model, tokens = tiny_model(), markov_tokens(301)
    tb = byte_table() if bytes_of == "table" else by_position(tokens.numel())
    trace = sliding.Trace.for_stream(tokens.numel())
    got = sliding.eval_stream(model, tokens, tb, seq_len=32, stride=stride, batch_windows=5,
                              trace=trace)
    want = _reference(model, tokens, tb, 32, stride)
    assert got == pytest.approx(want, rel=1e-6)
    assert (trace.times_scored == 1).all()


def test_every_batch_has_one_shape_so_a_compiled_forward_never_recompiles():
    model, tokens, tb = tiny_model(), markov_tokens(301), byte_table()
    shapes = []

    def logits_fn(x):
        shapes.append(tuple(x.shape))
        return model.forward_logits(x)

    got = sliding.eval_stream(model, tokens, tb, seq_len=32, stride=8, batch_windows=4,
                              logits_fn=logits_fn)
    assert len(sliding.segments(0, 300, 32, 8)) % 4 != 0  # the last batch is padded
    assert set(shapes) == {(4, 32)}
    assert got == pytest.approx(_reference(model, tokens, tb, 32, 8), rel=1e-6)


def test_after_the_warm_up_scoring_compiles_nothing():
    """warm_scoring calls the scoring function at the one shape and in the modes the phases do
    (the trainer's document-masked model, looping on): it compiles there, and the non-overlapping
    and sliding phases after it, tilted or not, add no graph."""
    model, logits_fn, graphs = counted_compile(SCORING_COMPILE)
    sliding.warm_scoring(model, logits_fn, seq_len=32, batch_windows=4)
    assert len(graphs) == 1 and model.training
    tokens = torch.randint(2, model.tok_emb.num_embeddings, (301,),
                           generator=torch.Generator().manual_seed(1))
    tokens[::50] = BOS_ID
    for stride, tilt in [(32, None), (8, NgramTilt(order=3, threshold=0.5, boost=2.0,
                                                   device=torch.device("cpu")))]:
        sliding.eval_stream(model, tokens, by_position(tokens.numel()), seq_len=32, stride=stride,
                            batch_windows=4, logits_fn=logits_fn, tilt=tilt)
    assert len(graphs) == 1


def test_every_scored_position_after_the_first_window_has_the_stride_guaranteed_context():
    for stride in (8, 32):
        segs = sliding.segments(0, 300, 32, stride)
        # Context of the first position a window scores (its later positions see more).
        contexts = [s - max(0, e - 32) for s, e in segs[1:]]
        assert min(contexts) == 32 - stride


def test_windows_never_hold_tokens_past_what_they_score():
    tokens = torch.arange(100)
    x, y, target_pos, scored, firsts = sliding._windows(tokens, torch.tensor([0, 10, 0]),
                                                        torch.tensor([10, 12, 0]), 16)
    assert x[0, 10:].eq(0).all() and y[0, 10:].eq(0).all()  # the first window: positions 0..9 only
    assert int(x[0, 9]) == 9 and int(y[0, 9]) == 10
    assert torch.equal(target_pos[scored], torch.tensor(list(range(1, 11)) + [11, 12]))
    assert scored[0].nonzero().flatten().tolist() == list(range(10))
    assert scored[1].nonzero().flatten().tolist() == [10, 11]
    assert not scored[2].any() and x[2].eq(0).all()  # padding: an empty segment scores nothing


def test_a_validation_set_shorter_than_one_window_is_refused():
    with pytest.raises(sliding.ValidationTooShort, match="fewer than one evaluation window"):
        sliding.eval_stream(tiny_model(), markov_tokens(32), byte_table(), seq_len=32, stride=8,
                            batch_windows=4)


def test_bits_per_byte_uses_the_byte_table():
    tally = sliding.Tally(*(torch.tensor(v, dtype=torch.float64) for v in (100.0, 50.0, 200.0)))
    loss, bpb = tally.result()
    assert loss == 2.0 and bpb == pytest.approx(2.0 / math.log(2) * 50 / 200)
