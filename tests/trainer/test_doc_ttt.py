"""Per-document LoRA TTT with phased global SGD (trainer/doc_ttt.py, trainer/lora.py), on the
trainer's own model at the tiny preset, CPU."""

import pytest
import torch

from trainer import doc_ttt, probe, sliding
from trainer.config import load_config
from trainer.lora import DocAdapters
from trainer.model import GPT
from trainer.scoring import LORA_TTT_COMPILE
from trainer.shards import BOS_ID
from trainer_support import counted_compile, two_gloo_ranks

N = 321
SGD = dict(chunk_tokens=64, epochs=1, lr=0.05, momentum=0.9, grad_clip=1.0, batch_seqs=2)


def _model(random=True):
    cfg = load_config(env={}, overrides={"PRESET": "tiny", "EVAL_SEQ_LEN": "32"})
    torch.manual_seed(0)
    model = GPT(cfg)
    if random:  # zero-initialized projections would hide what the adapters change
        for p in model.parameters():
            if p.ndim == 2:
                torch.nn.init.normal_(p, std=0.2)
    model.looping_active = True
    return model


def _tokens(n=N, doc_every=40, seed=1):
    tokens = torch.randint(2, 1024, (n,), generator=torch.Generator().manual_seed(seed))
    tokens[::doc_every] = BOS_ID
    tokens[100] = BOS_ID  # documents of different lengths
    return tokens


def _ones(prev, tgt, target_pos):
    return torch.ones_like(tgt)


# Adapter sets per batch in every test run: batches of one shape, as adapt_batch pads them, so
# that comparisons across batchings hold to the last bit on every CPU (a BLAS may round a
# product of other rows differently, and TTT's steps amplify any difference).
SLOTS = 12


def _adapt(model, tokens, batches, lr=1e-2, chunk=8, rank=4):
    """Scores of adapt_batch over `batches` (each its own batch), base weights frozen."""
    for p in model.parameters():
        p.requires_grad_(False)
    trace, tally = sliding.Trace.for_stream(tokens.numel()), sliding.Tally.zeros(tokens.device)
    for batch in batches:
        assert len(batch) <= SLOTS
        adapters = DocAdapters(model, SLOTS, rank, tokens.device)
        doc_ttt.adapt_batch(model, adapters, tokens, batch, tally, _ones, seq_len=32, chunk=chunk,
                            lr=lr, trace=trace)
    return trace


def test_documents_start_at_each_bos_and_cover_every_position_once():
    tokens = torch.tensor([7, 7, BOS_ID, 5, 5, 5, BOS_ID, 4, BOS_ID, 3, 3])
    assert doc_ttt.documents(tokens) == [(0, 2), (2, 6), (6, 8), (8, 10)]
    assert doc_ttt.documents(tokens[2:]) == [(0, 4), (4, 6), (6, 8)]


def test_a_documents_group_follows_from_its_index_alone():
    docs = [(i, i + 1) for i in range(10)]
    assert [len(g) for g in doc_ttt.phase_groups(docs, 3, 6)] == [2, 2, 2, 4]
    # Fewer documents than TTT_PHASE_DOCS: the cuts stay where they were, the groups run short.
    assert [len(g) for g in doc_ttt.phase_groups(docs[:5], 3, 6)] == [2, 2, 1, 0]
    assert doc_ttt.phase_groups(docs, 0, 6) == [docs]
    batches = doc_ttt.doc_batches([(0, 3), (3, 10), (10, 12), (12, 20)], 3)
    assert batches == [[(12, 20), (3, 10), (0, 3)], [(10, 12)]]  # longest first


def test_batched_documents_score_exactly_as_one_at_a_time():
    """Each document has adapters of its own: side by side in one batch, or one per batch (of
    the same shape), the scores are the same to the last bit, and every position is scored
    once."""
    model, tokens = _model(), _tokens()
    docs = doc_ttt.documents(tokens)
    together = _adapt(model, tokens, [docs])
    alone = _adapt(model, tokens, [[d] for d in docs])
    assert (together.times_scored == 1).all()
    assert torch.equal(together.nll, alone.nll)


def test_compiled_adapter_pass_scores_as_eager_in_one_graph_for_every_width():
    """LoRA TTT's compile options (dynamic shapes, one full graph): the windows widen by a chunk
    per step (8, 16, 24, then 32 here) and one graph takes them all after the first width; the
    adapters' forward and backward through it score every position as the eager pass does."""
    from trainer.scoring import LORA_TTT_COMPILE

    model, tokens = _model(), _tokens()
    docs = doc_ttt.documents(tokens)
    for p in model.parameters():
        p.requires_grad_(False)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model.forward_logits, backend="aot_eager", **LORA_TTT_COMPILE)
    trace, tally = sliding.Trace.for_stream(tokens.numel()), sliding.Tally.zeros(tokens.device)
    doc_ttt.adapt_batch(model, DocAdapters(model, SLOTS, 4, tokens.device), tokens, docs, tally,
                        _ones, seq_len=32, chunk=8, lr=1e-2, logits_fn=compiled, trace=trace)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] <= 2
    assert (trace.times_scored == 1).all()
    assert torch.allclose(trace.nll, _adapt(model, tokens, [docs]).nll, atol=1e-5)


def test_bytes_are_read_by_the_targets_stream_position():
    """With a byte sidecar the bytes of a target come from its position in the stream: each
    target's position is passed once, so counting positions as bytes sums 1..N-1."""
    model, tokens = _model(), _tokens()
    for p in model.parameters():
        p.requires_grad_(False)
    tally = sliding.Tally.zeros(tokens.device)
    for batch in doc_ttt.doc_batches(doc_ttt.documents(tokens), 4):
        doc_ttt.adapt_batch(model, DocAdapters(model, 4, 4, tokens.device), tokens, batch, tally,
                            lambda prev, tgt, pos: pos, seq_len=32, chunk=8, lr=1e-2)
    assert tally.bytes.item() == sum(range(1, N)) and tally.tokens.item() == N - 1


def test_each_chunk_is_scored_before_the_step_that_uses_it():
    model, tokens = _model(), _tokens()
    docs = doc_ttt.documents(tokens)
    trace = _adapt(model, tokens, [docs])
    # The first chunk of every document is scored by the base model, on its own tokens only
    # (to fp32 rounding: a product of one row and of a batch of rows may round differently).
    for lo, _ in docs:
        with torch.no_grad():
            logits = model.forward_logits(tokens[None, lo:lo + 8])[0]
        base = torch.nn.functional.cross_entropy(logits, tokens[lo + 1:lo + 9], reduction="none")
        assert torch.allclose(trace.nll[lo:lo + 8], base.double(), atol=1e-3)
    # Later chunks are scored by trained adapters, and every update reads scored positions only.
    assert not torch.allclose(trace.nll, _adapt(model, tokens, [docs], lr=0.0).nll)
    assert [r.ok for r in probe.check_once("lora", trace)] == [True]
    # Cutting the stream after a chunk leaves every score before the cut as it was.
    cut = _adapt(model, tokens[:137], [doc_ttt.documents(tokens[:137])])
    assert torch.equal(cut.nll[:136], trace.nll[:136])


def test_the_adapters_learn_a_repetitive_document():
    model = _model(random=False)
    tokens = torch.tensor([BOS_ID] + [5, 9, 13, 17] * 40)
    docs = doc_ttt.documents(tokens)
    adapted = _adapt(model, tokens, [docs], lr=3e-3).nll
    base = _adapt(model, tokens, [docs], lr=0.0).nll
    assert adapted[:8].mean() == pytest.approx(base[:8].mean())
    assert adapted[-40:].mean() < base[-40:].mean() - 1.0


def test_sgd_phases_train_on_scored_groups_and_change_only_later_scores():
    tokens = _tokens()
    traces = {}
    for phases in (0, 2):
        trace, lines = sliding.Trace.for_stream(N), []
        doc_ttt.eval_doc_ttt(_model(), tokens, _ones, seq_len=32, chunk=8, batch_docs=3,
                             lora_rank=4, lr=1e-2, phases=phases, phase_docs=4, sgd=SGD,
                             log=lines.append, trace=trace)
        traces[phases] = trace
    # Groups: documents 0-1 (positions 0..79), 2-3 (80..119), then the rest.
    plain, phased = traces[0].nll, traces[2].nll
    assert torch.equal(plain[:80], phased[:80])
    assert not torch.allclose(plain[80:], phased[80:])
    # The SGD steps: the training ranges only the phased run has, inside groups already scored.
    sgd_ranges = [e for e in traces[2].events if e not in set(traces[0].events)]
    # Prefixes 0..79 and 0..119 in 64-position chunks, the last of each (at a zero rate) skipped.
    assert sgd_ranges == [("train", 0, 64), ("train", 0, 64)]
    assert [r.ok for r in probe.check_once("lora", traces[2])] == [True]
    assert lines[0].startswith("ttt_lora:start docs=9 groups=3 ")
    assert "ttt_lora:sgd 1/2 positions=0..79" in lines[2]



def _split_runs(tokens):
    """Adapters alone; then SGD phases alone (adapters at a zero rate, so the score reads the
    phases' base weights: Adam's first step is the sign of each gradient entry, which would
    turn the last-bit differences of summed gradients into visible ones)."""
    results = []
    for lr, phases in ((1e-2, 0), (0.0, 2)):
        model = _model()
        score = doc_ttt.eval_doc_ttt(model, tokens, _ones, seq_len=32, chunk=8, batch_docs=2,
                                     lora_rank=4, lr=lr, phases=phases, phase_docs=4, sgd=SGD,
                                     log=lambda line: None)
        results.append((score, model.tok_emb.weight.sum().item()))
    return results


def _two_rank_work():
    return _split_runs(_tokens())


@pytest.mark.slow
def test_two_ranks_agree_with_one(tmp_path):
    """Batches dealt to two gloo processes: the adapters score exactly as in one process; the
    SGD phases, their gradients summed over the two, adapt the base as one process does."""
    results = two_gloo_ranks(_two_rank_work, tmp_path)
    (adapters, _), (phased, emb_sum) = _split_runs(_tokens())
    for (r_adapters, _), (r_phased, r_emb_sum) in results:
        assert r_adapters == adapters
        # Gradients summed over two ranks round otherwise than one process's: the base weights
        # agree to 1e-5, and the score agreed to 1.1e-4 on one 2-core CPU (the phases move it
        # by 9e-3).
        assert r_phased == pytest.approx(phased, rel=5e-4)
        assert r_emb_sum == pytest.approx(emb_sum, rel=1e-5)
    assert results[0] == results[1]  # every rank reports the same all-reduced figures


def test_the_compiled_adapter_pass_is_one_graph_for_every_width():
    """LoRA TTT's pass is compiled with dynamic shapes, each graph a compile of the whole model
    (minutes on the GPU): windows of every width, the first as wide as its chunk and the last
    past the rotary training length, document-masked, must all take the first graph."""
    model, logits_fn, graphs = counted_compile(LORA_TTT_COMPILE, ROPE_TRAIN_SEQ_LEN="32")
    tokens = _tokens(n=200, doc_every=90)
    docs = doc_ttt.documents(tokens)
    assert [hi - lo for lo, hi in docs] == [90, 10, 80, 19]
    for p in model.parameters():
        p.requires_grad_(False)
    adapters = DocAdapters(model, 2, 4, tokens.device)
    tally = sliding.Tally.zeros(tokens.device)
    for batch in (docs[:2], docs[2:]):
        doc_ttt.adapt_batch(model, adapters, tokens, batch, tally, _ones, seq_len=64, chunk=8,
                            lr=1e-2, logits_fn=logits_fn)
    assert int(tally.tokens) == 199 and len(graphs) == 1


def test_the_compiled_adapter_pass_keeps_its_one_graph_through_the_sgd_phases():
    """The whole evaluation, groups and the SGD phases between them, through one compiled
    graph: an SGD phase trains the model (its `training` flag, its parameters' requires_grad)
    and must leave nothing a guard of the first graph reads changed. PR #1855's script
    recompiles its whole model after each of its phases (docs/benchmarks.md, seventh run)."""
    model, logits_fn, graphs = counted_compile(LORA_TTT_COMPILE)
    tokens = _tokens(n=200, doc_every=30)
    lines = []
    doc_ttt.eval_doc_ttt(model, tokens, _ones, seq_len=32, chunk=8, batch_docs=2, lora_rank=4,
                         lr=1e-2, phases=2, phase_docs=4, sgd=SGD, log=lines.append,
                         logits_fn=logits_fn)
    assert sum(line.startswith("ttt_lora:sgd") for line in lines) == 2
    assert len(graphs) == 1


def test_padding_after_the_window_changes_neither_logits_nor_gradients():
    """A window padded after its last token gives its kept positions the logits, and its
    adapters the gradients, of the window alone: attention is causal, and the rotary base is
    stretched for the tokens (20, past the rotary length of 16 here), not the padding."""
    cfg = load_config(env={}, overrides={"PRESET": "tiny", "ROPE_TRAIN_SEQ_LEN": "16"})
    torch.manual_seed(0)
    model = GPT(cfg)
    model.looping_active = True
    for p in model.parameters():
        if p.ndim == 2:
            torch.nn.init.normal_(p, std=0.2)
        p.requires_grad_(False)
    adapters = DocAdapters(model, 2, 4, torch.device("cpu"))
    for p in adapters.parameters():
        torch.nn.init.normal_(p, std=0.1)
    x = torch.randint(2, 1024, (2, 20), generator=torch.Generator().manual_seed(3))
    keep = torch.arange(12, 20)
    results = []
    for window in (x, torch.cat((x, torch.zeros(2, 12, dtype=x.dtype)), 1)):
        logits = model.forward_logits(window, adapters, keep)
        grads = torch.autograd.grad(logits.logsumexp(-1).sum(), list(adapters.parameters()))
        results.append((logits, grads))
    (plain, plain_grads), (padded, padded_grads) = results
    assert torch.allclose(padded, plain, atol=1e-4)
    for a, b in zip(padded_grads, plain_grads):
        assert torch.allclose(a, b, rtol=1e-3, atol=1e-4 * b.abs().max())


def test_a_padded_pass_scores_every_position_once_before_its_step(monkeypatch):
    """The pass with windows padded to a multiple of WIDTH_STEP: every position scored once and
    the probe's order holds; with the adapters at a zero rate the scores are the unpadded
    pass's to rounding (a step's sign-like first Adam update turns rounding into visible
    differences on this random model, so the rate is zero here; the gradients are checked
    above)."""
    model, tokens = _model(), _tokens()
    docs = doc_ttt.documents(tokens)
    monkeypatch.setattr(doc_ttt, "WIDTH_STEP", 1)
    plain = _adapt(model, tokens, [docs], lr=0.0)
    monkeypatch.setattr(doc_ttt, "WIDTH_STEP", 32)
    assert torch.allclose(_adapt(model, tokens, [docs], lr=0.0).nll, plain.nll, atol=1e-3)
    padded = _adapt(model, tokens, [docs])
    assert (padded.times_scored == 1).all()
    assert [r.ok for r in probe.check_once("lora", padded)] == [True]


def test_after_the_warm_up_the_pass_compiles_nothing(monkeypatch):
    """warm_lora_pass meets every shape the pass can (on random tokens): then the whole evaluation,
    documents of every length and the SGD phases between groups, adds no graph, and its windows
    take a bounded set of widths, those of window_width."""
    monkeypatch.setattr(doc_ttt, "WIDTH_STEP", 16)
    model, compiled, graphs = counted_compile(LORA_TTT_COMPILE)
    shapes = []

    def logits_fn(x, adapters, keep):
        shapes.append(tuple(x.shape))
        return compiled(x, adapters, keep)
    adapters = DocAdapters(model, 3, 4, torch.device("cpu"))
    doc_ttt.warm_lora_pass(model, adapters, seq_len=64, chunk=8, logits_fn=logits_fn)
    warmed, compiles = set(shapes), len(graphs)
    assert warmed == {(3, w) for w in (16, 32, 48, 64)}
    tokens = _tokens(n=400, doc_every=70)
    tokens[[150, 153, 300]] = BOS_ID  # a 3-token document, and documents of other lengths
    shapes.clear()
    lines = []
    doc_ttt.eval_doc_ttt(model, tokens, _ones, seq_len=64, chunk=8, batch_docs=3, lora_rank=4,
                         lr=1e-2, phases=2, phase_docs=4, sgd=SGD, log=lines.append,
                         logits_fn=logits_fn, adapters=adapters)
    assert sum(line.startswith("ttt_lora:sgd") for line in lines) == 2
    assert set(shapes) == warmed and len(graphs) == compiles


def test_batches_are_dealt_so_ranks_end_together():
    """Heaviest first, each to the rank with the least work: where round robin gave the first
    rank the longest batch of every round, the ranks' work differs by at most one batch's."""
    lengths = [900, 800, 700, 300, 250, 200, 100, 50, 40, 30]
    batches = [[(0, n)] for n in lengths]
    shares = doc_ttt.deal(batches, 3, chunk=48, seq_len=256)
    work = [sum(doc_ttt.batch_work(b[0][1], 48, 256) for b in share) for share in shares]
    assert sorted(b for share in shares for b in share) == sorted(batches)
    assert max(work) - min(work) <= doc_ttt.batch_work(max(lengths), 48, 256)
    round_robin = [sum(doc_ttt.batch_work(b[0][1], 48, 256) for b in batches[r::3]) for r in range(3)]
    assert max(work) - min(work) < max(round_robin) - min(round_robin)
    assert doc_ttt.deal(batches, 1, chunk=48, seq_len=256) == [batches]  # longest first
    # A batch's work: padded widths per step (48 -> 128, 96 -> 128, then the cap of 256).
    assert doc_ttt.batch_work(150, 48, 256) == 128 + 128 + 256 + 256


def test_no_sgd_phase_once_no_document_is_left_to_score():
    """A stream shorter than TTT_PHASE_DOCS: its last documents end in a phase group, and the
    SGD phase after it, which no score would read, is skipped."""
    tokens = _tokens()  # 9 documents: with 10 phase documents in 2 phases, groups of 5 and 4
    lines = []
    doc_ttt.eval_doc_ttt(_model(), tokens, _ones, seq_len=32, chunk=8, batch_docs=3,
                         lora_rank=4, lr=1e-2, phases=2, phase_docs=10, sgd=SGD,
                         log=lines.append)
    assert [line.split()[0] + " " + line.split()[1] for line in lines[1:]] == [
        "ttt_lora:group 1/3", "ttt_lora:sgd 1/2", "ttt_lora:group 2/3", "ttt_lora:group 3/3"]
