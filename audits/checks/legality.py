"""Legality of training and evaluation: what the code does with validation data, judged by the
static analysis in audits/legality (one run per submission, shared by every rule here)."""

from __future__ import annotations

import re

from audits import catalogue, legality
from audits.findings import Severity
from audits.registry import check, found

_WRAPPER = re.compile(r"exec\s*\(.*(decompress|b85decode|b64decode)", re.S)


def findings(sub, rule: str):
    """The findings of `rule`, placed in the (unwrapped) source and explained."""
    result = legality.analyse(sub)
    for rel in result.unparsed:
        yield found(rule, f"{rel} was not checked: it does not parse", severity=Severity.INFO,
                    file=rel, unchecked=True)
    for rel, script in sorted(sub.scripts.items()):
        parsed = result.scripts.get(rel)
        if script.unwrapped is None and parsed is not None and _is_wrapper(parsed):
            yield found(rule, f"{rel} is a self-extracting wrapper whose code was not unwrapped, so "
                        "it was not checked", severity=Severity.INFO, file=rel, unchecked=True)
    for verdict in sorted(result.of(rule), key=_order):
        yield _finding(sub, result, verdict)


def _is_wrapper(parsed) -> bool:
    """A few statements that exec a decoded payload: the code that runs is not in the file."""
    return len(parsed.module.body) <= 4 and bool(_WRAPPER.search(parsed.source[:1024] + parsed.source[-1024:]))


def _order(verdict):
    at = verdict.site.position()
    return (verdict.site.inner_fn.script.rel, at.start.line if at else 0, -int(verdict.severity))


def _finding(sub, result, v):
    script = v.site.inner_fn.script
    at = v.site.position()
    line = at.start.line if at else None
    other_line = None
    evidence = [_excerpt(script, at)] if at else []
    if v.other is not None:
        other_script = v.other.inner_fn.script
        other_at = v.other.position()
        if other_at is not None:
            other_line = other_at.start.line
            where = "" if other_script is script else f"{other_script.rel}:"
            evidence.append(_excerpt(other_script, other_at, where))
    call_at = v.site.call_position()
    if call_at is not None and call_at.start.line != line:
        evidence.append(f"(reached through the call at line {call_at.start.line})")
    message = v.message.format(at=f"line {line}", other=f"line {other_line}")
    rule = catalogue.get(v.rule)
    source = rule.primary_source + (f"; contested, see {v.link}" if v.link else "")
    shipped = sub.scripts.get(script.rel)
    return found(v.rule, message, severity=v.severity, file=script.rel, line=line,
                 column=at.start.column if at else None, evidence="\n".join(evidence), hint=v.hint,
                 via=shipped.via(line) if shipped is not None else None, source=source,
                 confidence="medium" if v.link else "high")


def _excerpt(script, at, where: str = "") -> str:
    """The lines of a node, each with its number (`71: opt.step()`)."""
    lines = script.excerpt(at.start.line, at.end.line).split("\n")
    return "\n".join(f"{where}{at.start.line + i}: {text}" if text != "..." else text
                     for i, text in enumerate(lines))


@check("TTT_SCORE_AFTER_ADAPT")
def ttt_score_after_adapt(sub, options):
    """What it checks: in every loop of the evaluation code that both scores validation tokens
    (adds a loss or model output on them to a running total) and updates parameters (an optimizer
    step, or an in-place update from gradients), the order of the two on the same tokens. Scoring
    first, then training, is the legal score-first TTT and is noted as INFO. Training first, or
    scoring the same tokens again in a later pass (an epoch loop around the chunk loop, a chunk
    loop that rescans the whole set), fails. Repeated passes over a chunk that was already scored
    (multi-epoch adaptation) are a warning.

    Why it matters: #1017 C3 (score before update) and the README FAQ: "you are only allowed to
    test-time train on validation set tokens you've already evaluated your model on". PRs with
    adapt-then-score or score-on-the-last-epoch TTT were closed (issue #677; PR #991). Multi-epoch
    TTT after scoring is asked about on PR #1698 without a ruling, hence a warning.

    Illegal: `for ci in chunks: train(model, chunk); total += score(model, chunk)`;
    `for epoch in range(3): for ci in chunks: ... if epoch == 2: total += nll ...; opt.step()`.

    Legal: `for ci in chunks: with torch.no_grad(): total += nll(chunk); if not last: train(chunk)`
    (PR #549, #1413); per-document LoRA that scores a chunk before its Adam step (PR #77, #1530);
    phased global SGD over documents already scored (PR #1610, #1626).

    Known limits: order is read from the code, per function, through calls pgolf can resolve by
    name; a score kept only for logging inside the training phase is told apart from the reported
    one by whether its loss is backpropagated. A score and an update on different slices of the
    same tensor in one iteration are assumed to cover the same chunk.
    """
    yield from findings(sub, "TTT_SCORE_AFTER_ADAPT")


@check("PREQUANT_TTT_ON_VAL")
def prequant_ttt_on_val(sub, options):
    """What it checks: an update on validation tokens that runs as a separate pass, not
    interleaved with scoring: the tokens it trains on are scored only afterwards (typically an
    N-epoch AdamW fine-tune on `val_tokens` after training, before quantization and evaluation).

    Why it matters: #1017 C3; PR #1376 was closed for it and organizers excluded the whole
    cluster (#1485, #1487, #1488, #1489, #1517) as "pre-quant/future-validation leakage" (PR #1902).

    Illegal: `ttt_adapt_adamw(model, val_tokens, epochs=18)` followed by `eval_val(model, val_tokens)`.

    Legal: fine-tuning on training data; score-first TTT during evaluation.

    Known limits: the fine-tune and the evaluation must both be reached from the entry point; an
    update on validation data that no later score is found for is reported as
    VAL_DATA_IN_TRAINING instead.
    """
    yield from findings(sub, "PREQUANT_TTT_ON_VAL")


@check("VAL_DATA_IN_TRAINING")
def val_data_in_training(sub, options):
    """What it checks: validation data reaching training or state built before evaluation: an
    update whose loss rests on validation tokens that no earlier score covers (a training loader
    over the `fineweb_val_*` shards, validation batches mixed into training), or a table filled
    from validation tokens in a pass of its own and then read while scoring.

    Why it matters: the README FAQ: "You can't cheat by training on the validation set before you
    evaluate on the validation set"; val-only training was banned for the record track (issue
    #140); a table built from the whole set gives early tokens statistics of later ones (#1017 C1).

    Illegal: `loader = TokenLoader(args.val_files)` feeding the training loop; `batch =
    torch.cat([train_batch, val_tokens[i:j]])`; `counts = build_counts(val_tokens)` before scoring.

    Legal: training on `fineweb_train_*` shards only; a cache updated with each token after it is
    scored.

    Known limits: data is recognised by the shard names in string literals and followed through
    assignments, calls, attributes and containers; data read from a path pgolf cannot see (an
    argument on the command line) is not labelled.
    """
    yield from findings(sub, "VAL_DATA_IN_TRAINING")


@check("PAID_PREFIX")
def paid_prefix(sub, options):
    """What it checks: validation tokens (not scores or statistics of them) passed to a
    serializer or compressor (`torch.save`, `pickle`, `np.save`, `lzma`/`zlib`/`brotli`/`zstd`
    compress) or registered as a module buffer.

    Why it matters: README FAQ: you cannot access validation data during training "by compressing
    it into your 16mb with 'paid prefix'"; PRs #168 and #262 did exactly that (#1017 C1).

    Illegal: `torch.save({"w": state, "prefix": val_tokens[:n]}, f)`;
    `self.register_buffer("memory", val_tokens[:n])`.

    Legal: saving the model, and tables built from training data.

    Known limits: a value derived from validation tokens through a reduction (a sum, a matrix
    product) is a statistic, not tokens, and is not flagged here.
    """
    yield from findings(sub, "PAID_PREFIX")


@check("GPTQ_CALIB_ON_VAL")
def gptq_calib_on_val(sub, options):
    """What it checks: quantization calibration (activation statistics gathered by forward hooks,
    or `H += x.T @ x` accumulations) fed with validation tokens. Calibration on training data and
    on tokens the model samples itself (`torch.multinomial`) is noted as INFO.

    Why it matters: calibrating on validation data "breaks autoregressivity" (PR #728, closed;
    AWQ on PR #1919), #1017 C1. Self-generated calibration was merged (PR #1019).

    Illegal: hooks on every linear layer, then `model(val_tokens[i:j])` in a loop.

    Legal: the same with `train_loader.next_batch()`, or with sequences generated by sampling.

    Known limits: calibration is recognised by forward-hook registration or an outer-product
    accumulation; a calibration that reads activations some other way is not seen. Whether
    training-data calibration fits in the training budget is GPTQ_CALIB_AFTER_BUDGET's question.
    """
    yield from findings(sub, "GPTQ_CALIB_ON_VAL")


@check("SLOT")
def slot(sub, options):
    """What it checks: parameters created inside the scoring loop for one window or batch (a
    hidden-state delta, a logit bias, a small adapter), optimized on a loss over that window's
    targets and then used to score the same window. If the loss covers only the window's context
    (positions before the scored ones) it is a warning: issue #1336 asks whether that is legal.

    Why it matters: the optimized parameters depend on the tokens being scored, so each score
    depends on its own and later tokens (#1017 C1, C3). PR #1240 measured the violation; no SLOT
    PR was merged.

    Illegal: `delta = torch.zeros(bsz, 1, dim, requires_grad=True); for _ in range(k):
    loss = nll(model(x) + delta, y); ...; opt.step()` then `total += nll(model(x) + delta, y)`.

    Legal: sliding-window scoring without per-window parameters.

    Known limits: the context-only reading needs the optimized and the scored positions to be
    slices whose bounds are the same names (`[:, :s]` then `[:, s:]`).
    """
    yield from findings(sub, "SLOT")


@check("ETLB")
def etlb(sub, options):
    """What it checks: a bias tensor kept across windows (made once, outside the scoring loop,
    with gradients) that is fitted on a window's targets before that window is scored with it.
    Fitting it after the window is scored, for later windows only, is score-first and noted INFO.

    Why it matters: the window's own tokens shape the bias that scores them (#1017 C1, C3); the
    eval-time logit bias of PR #1399 was never merged and records list "No ETLB".

    Illegal: `bias = torch.zeros(vocab, requires_grad=True)`; per window: a few steps on
    `cross_entropy(logits + bias, y)`, then `total += cross_entropy(logits + bias, y)`.

    Legal: score the window with the current bias, then update the bias on it.

    Known limits: a plain tensor updated this way is ETLB whatever it is added to; model or adapter
    parameters updated the same way are TTT_SCORE_AFTER_ADAPT.
    """
    yield from findings(sub, "ETLB")


@check("NGRAM_TARGET_IN_KEY")
def ngram_target_in_key(sub, options):
    """What it checks: a table read with a hashed key (XOR, masks, modulo, large multipliers,
    `hash()`) that is computed from the token being scored: the targets of the loss, the index
    of the probability read, or the token one position after a context slice.

    Why it matters: only the realized token's entry is looked up, so the implied distribution is
    not normalized over the vocabulary (#1017 C2); ruled out on PR #779, about 33 PRs closed.

    Illegal: `full_key = (ctx_hash ^ (tgt * PRIME)) & MASK; p = full_counts[full_key] /
    ctx_counts[ctx_key]`.

    Legal: a key hashed from the context only, giving a hint token or a distribution over the
    vocabulary that is renormalized (the tilt of PR #1514); writing counts keyed by the scored
    token after it was scored.

    Known limits: the scored token is recognised from losses, gathers and shifted slices in the
    same function or passed in as an argument; a target recovered some other way is not seen.
    """
    yield from findings(sub, "NGRAM_TARGET_IN_KEY")


@check("NGRAM_NOT_NORMALIZED")
def ngram_not_normalized(sub, options):
    """What it checks: two narrow shapes whose probabilities provably do not sum to 1: an
    additive-smoothed estimate `(count + k) / (total + k2)` with k2 < 2k (the total needs k times
    the vocabulary size), and a token tilt (`target == hint` boosting the scored token) with no
    normalizer (no division, no log Z) where it meets the probability.

    Why it matters: #1017 C2; PR #972 was closed after PR #978 showed the correctly normalized
    cache gives 1.51 bpb.

    Illegal: `p = (counts[k] + 1) / (totals[c] + 1)`; `nll = nll - beta * (tgt == hint)`.

    Legal: `(counts[k] + 1) / (totals[c] + vocab)`; `nll + log(Z) - beta * (tgt == hint)` with
    `Z = 1 + p_hint * (exp(beta) - 1)`.

    Known limits: general normalization cannot be decided statically; other wrong denominators
    are not found.
    """
    yield from findings(sub, "NGRAM_NOT_NORMALIZED")


@check("TWO_PASS_RESCORE")
def two_pass_rescore(sub, options):
    """What it checks: a score that keeps the better of two predictions chosen by comparing their
    losses on the true token (`min` of two NLLs), and a first pass that scores the validation
    tokens while filling a table that a second pass reads to score them again.

    Why it matters: #1017 C4 (one left-to-right pass, no picking by outcome); PRs #846, #853,
    #959 (two-pass full rescore) and #659 (min of model and n-gram NLL) were ruled out.

    Illegal: `nll = torch.minimum(nll_model, nll_cache)`; pass 1 fills `cache` and sums NLL, pass
    2 rescores with `cache`.

    Legal: one pass, mixing with weights from the context only.

    Known limits: rescoring after training is TTT_SCORE_AFTER_ADAPT's finding.
    """
    yield from findings(sub, "TWO_PASS_RESCORE")


@check("BYTE_MIXTURE_NOT_NORMALIZED")
def byte_mixture_not_normalized(sub, options):
    """What it checks: probabilities of the scored token's own bytes (its piece's bytes, looked
    up or decoded from the target) mixed into that token's score, including spreading a token
    probability over its byte count (`p ** (1 / n_bytes[target])`).

    Why it matters: computed for the realized token only, the mixture is not a distribution over
    the token vocabulary (#1017 C2; issue #1872; excluded in PR #1902).

    Illegal: `for b in piece_bytes[tgt]: p_bytes *= ppm.prob(b)`, then
    `p = lam * p_model[tgt] + (1 - lam) * p_bytes`.

    Legal: byte-model probabilities computed for every token of the vocabulary and renormalized
    before mixing.

    Known limits: recognises byte tables indexed by the target and tokenizer decode calls on it.
    """
    yield from findings(sub, "BYTE_MIXTURE_NOT_NORMALIZED")


@check("REALIZED_TOKEN_GATE")
def realized_token_gate(sub, options):
    """What it checks: a mixture weight or tilt strength looked up from, or chosen by, the token
    being scored (`boundary[target]`, `alpha_table[target]`), applied to a probability or to a
    tilt indicator that enters the score.

    Why it matters: the gate reads x_t to shape p_t(x_t) (#1017 C1); the within-word and
    word-start experts of PRs #1967, #2018 did this and were flagged; PR #1514 disabled them.

    Illegal: `beta = torch.where(is_boundary[tgt], word_beta, within_beta)` in the tilt.

    Legal: gates from the previous token or the context (`is_boundary[prev]`); masking which
    positions count (a padding mask on the NLL).

    Known limits: a weight multiplying the NLL itself is read as a position mask, not a gate.
    """
    yield from findings(sub, "REALIZED_TOKEN_GATE")


@check("BOS_CROSS_DOC_LEAK")
def bos_cross_doc_leak(sub, options):
    """What it checks: previous-token mixing (`x[:, 1:] + g * x[:, :-1]`, or `x + g * x_prev`
    with `x_prev` built from `x[:, :-1]`) that is not masked where the current token is BOS: no
    `==`/`!=` comparison (a BOS mask) reaches the gate or the shifted term. Masked mixing is INFO.

    Why it matters: in packed rows the first token of a document then sees the last token of the
    previous one (#1017 C1); found in the PR #1797 audit, fixed in PR #1851.

    Illegal: `x = torch.cat([x[:, :1], x[:, 1:] + g * x[:, :-1]], dim=1)` with no mask.

    Legal: `g = g.masked_fill(input_ids[:, 1:] == BOS_ID, 0.0)` before mixing.

    Known limits: shifts made with `torch.roll` or `F.pad` are not recognised.
    """
    yield from findings(sub, "BOS_CROSS_DOC_LEAK")


@check("BPB_BYTE_ACCOUNTING")
def bpb_byte_accounting(sub, options):
    """What it checks: bits per byte divided by a fixed bytes-per-token literal, and a
    bytes-per-token table built from tokenizer pieces that does not count byte-fallback pieces
    as 1 byte or does not turn the leading '▁' into one space byte. A table that handles both is
    noted as INFO.

    Why it matters: the byte count is the denominator of the score; the Scylla record was removed
    for a +4.13% byte count (PR #1806), issue #897 shows the leading-space error.

    Illegal: `val_bpb = val_loss / math.log(2) / 3.6`; `lut[i] = len(sp.id_to_piece(i).encode())`.

    Legal: the baseline's `build_sentencepiece_luts` (is_byte -> 1, strip '▁', count it when the
    previous token is not a boundary); a per-token byte sidecar.

    Known limits: tables built without a loop over token ids, and custom tokenizers, are not
    judged.
    """
    yield from findings(sub, "BPB_BYTE_ACCOUNTING")


@check("TRAIN_DATA_AT_EVAL")
def train_data_at_eval(sub, options):
    """What it checks: training data reaching a validation score (a cache or table filled from
    training shards during evaluation and mixed into the scores), and updates on training batches
    inside the loop that scores validation tokens.

    Why it matters: README FAQ: "you aren't allowed to access any training data during
    evaluation, unless you pay for those bits in the <16MB limit".

    Illegal: an eval function that loads `fineweb_train_*` shards to pre-fill an n-gram cache.

    Legal: tables built from training data during training and stored in the artifact.

    Known limits: a table saved to the artifact file and loaded back is not connected to the
    training data it came from (that is the legal path).
    """
    yield from findings(sub, "TRAIN_DATA_AT_EVAL")


@check("NETWORK_AT_EVAL")
def network_at_eval(sub, options):
    """What it checks: network calls (urllib, requests, http.client, sockets, Hugging Face hub,
    `datasets.load_dataset`, torch.hub, shell commands with curl/wget/pip) reachable from the entry
    point. One made once scoring has started fails; one reachable before scoring is a warning;
    one in code the entry point never runs (a data-preparation script) is INFO.

    Why it matters: README FAQ: "No external downloads, training dataset access, or network calls
    are allowed during evaluation. The artifact must be fully self-contained."

    Illegal: `urllib.request.urlretrieve(url, path)` inside the evaluation loop.

    Legal: downloads in a separate data-preparation script.

    Known limits: a call made through a library pgolf does not know is not seen.
    """
    yield from findings(sub, "NETWORK_AT_EVAL")
