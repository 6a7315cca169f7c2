"""Per-document LoRA test-time training with phased global SGD (TTT_MODE=lora).

The technique of PRs #1530, #1610, #1855 and #1953, in this order:
  documents  the stream is cut at BOS tokens: a document's positions run from its BOS to the one
             before the next BOS (whose target is that BOS); positions before the first BOS make
             one too. Every position belongs to exactly one document.
  groups     the first TTT_PHASE_DOCS documents of the stream are split into TTT_PHASES groups;
             the rest of the stream is one more group.
  adapters   inside a group, documents run TTT_LORA_BATCH_DOCS side by side (longest first, so a
             batch's documents end together), each with adapters of its own (trainer/lora.py),
             started afresh. A document is read in chunks of TTT_LORA_CHUNK_TOKENS positions; for
             each chunk, in order, the window of up to EVAL_SEQ_LEN of the document's own tokens
             ending at the chunk goes through the model once: the chunk's losses are added to the
             total, and only then do the same losses take one Adam step of that document's
             adapters. The last chunk of a document is never trained on.
  phases     after each of the first TTT_PHASES groups, the whole model takes SGD steps
             (trainer/ttt.py's train_on_chunk, TTT_LR on a cosine over TTT_CHUNK_TOKENS chunks)
             on the stream up to the end of that group: every one of those positions is scored.
             A stream of fewer than TTT_PHASE_DOCS documents skips the phases after which no
             document is left.
Why it is legal (#1017 C1, C3, C4): a document's scores depend on its own earlier tokens, on
adapters trained on its own already-scored chunks, and on base weights trained on whole groups
scored before its group began, all of which lie before it in the stream. So a change to a token
never changes the score of an earlier token, whatever order the documents of a group run in, and
every position is scored once, before any update that used it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trainer.distributed import rank_and_world
from trainer.evaluate import autocast
from trainer.extras import EXTRAS
from trainer.lora import DocAdapters
from trainer.shards import BOS_ID
from trainer.sliding import Tally, TargetBytes, Trace, check_length
from trainer.ttt import chunk_bounds, cosine_lr, train_on_chunk

Doc = tuple[int, int]  # positions [lo, hi) of one document

# Adam of the adapters as PR #1953 ran it: no first moment (each step follows its own chunk's
# gradient), a short second-moment memory, and a decay that pulls adapters back to the start.
ADAM_BETAS, ADAM_EPS, ADAM_WEIGHT_DECAY = (0.0, 0.99), 1e-10, 0.5


def documents(tokens: Tensor) -> list[Doc]:
    """The position ranges of the stream's documents, in order, covering every position once."""
    n = tokens.numel() - 1
    starts = (tokens[:n] == BOS_ID).nonzero().flatten().tolist()
    if not starts or starts[0] != 0:
        starts = [0] + starts
    return list(zip(starts, starts[1:] + [n]))


def phase_groups(docs: list[Doc], phases: int, phase_docs: int) -> list[list[Doc]]:
    """The first `phase_docs` documents in `phases` near-equal groups, then the rest as one.
    A document's group follows from its index alone: were the cuts scaled to the number of
    documents, a BOS late in the stream would move documents before it to another group."""
    cuts = [min(phase_docs * k // phases, len(docs)) for k in range(phases + 1)] if phases else [0]
    return [docs[a:b] for a, b in zip(cuts, cuts[1:])] + [docs[cuts[-1]:]]


def doc_batches(group: list[Doc], batch_docs: int) -> list[list[Doc]]:
    """The group's documents longest first, `batch_docs` to a batch."""
    ordered = sorted(group, key=lambda d: d[0] - d[1])  # stable: equal lengths stay in order
    return [ordered[i:i + batch_docs] for i in range(0, len(ordered), batch_docs)]


# Windows are padded after their last token to a multiple of this width (at most EVAL_SEQ_LEN),
# so the pass meets a bounded set of shapes, all of which warm_lora_pass compiles before the
# evaluation.
WIDTH_STEP = 128


def window_width(c: int, chunk: int, seq_len: int) -> tuple[int, int]:
    """(tokens, padded width) of the window of the chunk starting at position c of a document:
    both follow from c alone, never from the tokens."""
    width = min(seq_len, c + chunk)
    return width, min(seq_len, -(-width // WIDTH_STEP) * WIDTH_STEP)


def batch_work(longest: int, chunk: int, seq_len: int) -> int:
    """Window positions per row of a batch whose longest document has `longest` positions:
    every step's padded width, summed."""
    return sum(window_width(c, chunk, seq_len)[1] for c in range(0, longest, chunk))


def adapt_batch(model: nn.Module, adapters: DocAdapters, tokens: Tensor, docs: list[Doc],
                tally: Tally, target_bytes: TargetBytes, *, seq_len: int, chunk: int, lr: float,
                logits_fn=None, trace: Trace | None = None, tilt=None) -> None:
    """Score every position of `docs` once, chunk by chunk, each chunk before the Adam step of
    its document's adapters that uses it. `adapters` has a set for each of `docs`, reset here,
    and for as many empty documents after them: every batch has the same shape, so a document's
    losses never depend on how many others share its batch. `logits_fn` (default
    `model.forward_logits`) may be its compiled form. `tilt` (trainer/ngram_tilt.py) tilts the
    scores by a table of each document's chunks already scored, salted by the document's start,
    where its gate is open, else by its own table, to which nothing is added here."""
    logits_fn = model.forward_logits if logits_fn is None else logits_fn
    device = tokens.device
    docs = docs + [(0, 0)] * (adapters.docs - len(docs))
    adapters.reset()
    opt = torch.optim.AdamW(adapters.parameters(), lr=lr, betas=ADAM_BETAS, eps=ADAM_EPS,
                            weight_decay=ADAM_WEIGHT_DECAY)
    starts = torch.tensor([lo for lo, _ in docs], device=device)
    ends = torch.tensor([hi for _, hi in docs], device=device)
    longest = max(hi - lo for lo, hi in docs)
    own = tilt.empty() if tilt is not None else None
    for c in range(0, longest, chunk):
        # The window: the document's tokens up to the chunk's end, at most seq_len of them;
        # past the document's end, and after the window's last token, padding (never the next
        # document; attention is causal, so padding after a token never reaches its score).
        width, padded = window_width(c, chunk, seq_len)
        cols = torch.arange(padded, device=device)
        pos = starts[:, None] + (c + chunk - width) + cols
        inside = (cols < width) & (pos < ends[:, None])
        keep = cols[width - chunk:width]
        target_pos = (pos[:, keep] + 1).clamp(max=tokens.numel() - 1)
        x = torch.where(inside, tokens[pos.clamp(max=tokens.numel() - 2)], 0)
        scored = inside[:, keep]
        x_c, y_c = x[:, keep], torch.where(scored, tokens[target_pos], 0)
        with autocast(device):
            logits = logits_fn(x, adapters, keep)
        nll = F.cross_entropy(logits.flatten(0, 1).float(), y_c.flatten(), reduction="none")
        nll = nll.view_as(y_c)
        # 1. Score the chunk: these losses come from adapters trained on earlier chunks only
        # (tilted, with `tilt`; the adapters still train on the model's own losses).
        score = nll.detach()
        if tilt is not None:
            hint, boost = tilt.hints_after(own, tokens, target_pos - 1, starts[:, None])
            score = tilt.tilted_nll(logits.detach(), y_c, hint, boost)
        tally.loss += torch.where(scored, score.double(), 0.0).sum()
        tally.tokens += scored.sum()
        tally.bytes += torch.where(scored, target_bytes(x_c, y_c, target_pos), 0).sum()
        if tilt is not None:
            own.observe(tokens, (target_pos - 1)[scored], starts[:, None].expand_as(scored)[scored])
        if EXTRAS and trace is not None:
            if tilt is not None:
                logits = tilt.tilted_logits(logits.detach(), hint, boost)
            _record_chunk(trace, logits, score, pos[:, keep], scored, pos[:, 0], ends)
        # 2. Then train each document's adapters on the chunk just scored, unless it was the
        # document's last.
        more = ends - starts > c + chunk
        if c + chunk < longest:
            opt.zero_grad(set_to_none=True)
            (nll.mean(1) * more).sum().backward()
            opt.step()


def warm_lora_pass(model: nn.Module, adapters: DocAdapters, *, seq_len: int, chunk: int,
                   logits_fn) -> None:
    """Run `logits_fn` forward and backward at every window shape the pass can meet, on random
    tokens (no validation data), so that its compiles (the graph's, the attention kernels') all
    happen here, before the evaluation's timer. Nothing is scored and no adapter steps."""
    device = next(model.parameters()).device
    shapes = {}  # padded width -> a window's tokens
    for c in range(0, seq_len + chunk, chunk):
        width, padded = window_width(c, chunk, seq_len)
        shapes.setdefault(padded, width)
    gen = torch.Generator().manual_seed(0)
    model.eval()
    for p in model.parameters():  # as inside the pass: the compiled graph guards on these
        p.requires_grad_(False)
    for padded, width in sorted(shapes.items()):
        x = torch.randint(2, model.tok_emb.num_embeddings, (adapters.docs, padded), generator=gen)
        keep = torch.arange(width - chunk, width, device=device)
        with autocast(device):
            logits = logits_fn(x.to(device), adapters, keep)
        logits.float().logsumexp(-1).sum().backward()
    adapters.zero_grad(set_to_none=True)
    for p in model.parameters():
        p.requires_grad_(True)


def deal(batches: list[list[Doc]], ranks: int, *, chunk: int, seq_len: int) -> list[list[list[Doc]]]:
    """Each rank's batches: the heaviest batch (by batch_work) first, each to the rank with the
    least work so far, so that the ranks end a group together (the SGD phase waits for all)."""
    shares, load = [[] for _ in range(ranks)], [0] * ranks
    work = [batch_work(max(hi - lo for lo, hi in b), chunk, seq_len) for b in batches]
    for i in sorted(range(len(batches)), key=lambda i: -work[i]):  # stable: ties keep their order
        r = min(range(ranks), key=lambda r: load[r])
        shares[r].append(batches[i])
        load[r] += work[i]
    return shares


def _record_chunk(trace: Trace, logits: Tensor, nll: Tensor, pos: Tensor, scored: Tensor,
            firsts: Tensor, ends: Tensor) -> None:
    rows, cols = scored.nonzero(as_tuple=True)
    positions = pos[rows, cols].cpu()
    trace.nll[positions] = nll[rows, cols].double().cpu()
    trace.times_scored.index_add_(0, positions, torch.ones_like(positions))
    for p in sorted(trace.watch):
        hit = (pos == p) & scored
        if hit.any():
            r, c = hit.nonzero()[0].tolist()
            trace.rows[p] = torch.log_softmax(logits[r, c].detach().double(), -1).cpu()
    for r in rows.unique().tolist():
        lo, hi = int(pos[r][scored[r]].min()), int(pos[r][scored[r]].max()) + 1
        trace.events.append(("score", lo, hi))
        if hi < int(ends[r]):  # the adapter step that follows reads the window up to hi
            trace.events.append(("train", int(firsts[r]), hi))


def sgd_phase(model: nn.Module, tokens: Tensor, hi: int, *, seq_len: int, chunk_tokens: int,
              epochs: int, lr: float, momentum: float, grad_clip: float, batch_seqs: int,
              trace: Trace | None = None) -> None:
    """SGD of the whole model on positions [0, hi), all scored: a fresh momentum, the learning
    rate on a cosine over the chunks (the last, at zero, is skipped)."""
    for p in model.parameters():
        p.requires_grad_(True)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    chunks = chunk_bounds(hi, chunk_tokens)
    for ci, (lo, c_hi) in enumerate(chunks[:-1]):
        for group in opt.param_groups:
            group["lr"] = cosine_lr(lr, ci, len(chunks))
        train_on_chunk(model, opt, tokens, lo, c_hi, seq_len=seq_len, epochs=epochs,
                       batch_seqs=batch_seqs, grad_clip=grad_clip, trace=trace)
    model.eval()


def eval_doc_ttt(model: nn.Module, tokens: Tensor, target_bytes: TargetBytes, *, seq_len: int,
                 chunk: int, batch_docs: int, lora_rank: int, lr: float, phases: int, phase_docs: int,
                 sgd: dict, log: Callable[[str], None], logits_fn=None,
                 adapters: DocAdapters | None = None, trace: Trace | None = None,
                 tilt=None) -> tuple[float, float]:
    """(val_loss, val_bpb) of per-document LoRA TTT with phased global SGD over the whole stream
    (`sgd`: sgd_phase's settings; `logits_fn`: adapt_batch's; `adapters`: the batch_docs x
    lora_rank set warm_lora_pass ran, else a new one; `tilt`: an n-gram tilt, whose table takes
    each group where the SGD phase after it does). Modifies `model` in place."""
    check_length(tokens.numel(), seq_len)
    groups = phase_groups(documents(tokens), phases, phase_docs)
    me, size = rank_and_world()
    tally = Tally.zeros(tokens.device)
    log(f"ttt_lora:start docs={sum(map(len, groups))} groups={len(groups)} rank={lora_rank} lr={lr} "
        f"chunk={chunk} batch_docs={batch_docs} phases={phases} phase_docs={phase_docs}")
    t0 = time.perf_counter()
    if adapters is None:
        adapters = DocAdapters(model, batch_docs, lora_rank, tokens.device)
    for gi, group in enumerate(groups):
        model.eval()
        for p in model.parameters():  # the base stays fixed inside a group
            p.requires_grad_(False)
        batches = doc_batches(group, batch_docs)
        for batch in deal(batches, size, chunk=chunk, seq_len=seq_len)[me]:
            adapt_batch(model, adapters, tokens, batch, tally, target_bytes, seq_len=seq_len,
                        chunk=chunk, lr=lr, logits_fn=logits_fn, trace=trace, tilt=tilt)
        log(f"ttt_lora:group {gi + 1}/{len(groups)} docs={len(group)} batches={len(batches)} "
            f"time:{time.perf_counter() - t0:.1f}s")
        if group and any(groups[gi + 1:]):  # a phase only where documents are left to score
            sgd_phase(model, tokens, group[-1][1], seq_len=seq_len, trace=trace, **sgd)
            if tilt is not None:  # the group is scored, as the SGD phase's own data is
                tilt.observe(tokens, torch.arange(group[0][0], group[-1][1], device=tokens.device))
            log(f"ttt_lora:sgd {gi + 1}/{phases} positions=0..{group[-1][1] - 1} "
                f"time:{time.perf_counter() - t0:.1f}s")
    for p in model.parameters():
        p.requires_grad_(True)
    model.eval()
    tally.all_reduce()
    return tally.result()
