"""TTT_SCORE_AFTER_ADAPT: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import order
from audits.legality.judge import INFO, WARN, Verdict, recognizer
from audits.legality.values import VAL, is_update
from audits.registry import C3, FAIL, ILLEGAL, Rule, Words, check, issue, pr, readme, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("TTT_SCORE_AFTER_ADAPT", FAIL, "legality",
         "Tokens are scored before any update that used them, and never scored again after.",
         (readme("FAQ, test-time training"), issue(402), issue(677), pr(991)), (C3,),
        level=ILLEGAL, place=1),
)

_HINT = ("Score each chunk once, under torch.no_grad(), before any update that uses it; train on it "
         "only after that (and keep any epoch loop inside, after the scoring).")
# Its readings (the keys of its words).
ADAPT_THEN_SCORE, SCORED_AGAIN, ADAPT_PASS, RESCORED_AFTER_PASS, MULTI_EPOCH, SCORE_FIRST = (
    "adapt_then_score", "scored_again", "adapt_pass", "rescored_after_pass", "multi_epoch", "score_first")
WORDS = words(
    "TTT_SCORE_AFTER_ADAPT",
    adapt_then_score=Words(
        "the update at {at} trains on tokens before they are scored at {other}", _HINT),
    scored_again=Words(
        "tokens trained on at {at} are scored again at {other} in a later pass of the loop", _HINT),
    adapt_pass=Words(
        "the pass at {at} trains the exported model on the validation tokens, which are scored "
        "after it, at {other}", _HINT, origin="the pass begins at {origin}"),
    rescored_after_pass=Words(
        "the validation tokens are scored at {at} after the pass at {other} trained on them (that "
        "pass scored each chunk first; this later score comes after the training)",
        "Report the score of the pass that scored each chunk before training on it; do not score "
        "the tokens again with the adapted model."),
    multi_epoch=Words(
        "the update at {at} runs several passes over the same already-scored tokens (multi-epoch "
        "adaptation)", "No score changes, but reviewers have asked for a ruling; one pass per chunk "
        "avoids the question.", link="https://github.com/openai/parameter-golf/pull/1698"),
    score_first=Words(
        "legal score-first adaptation at {at}: the tokens it trains on were scored before, at "
        "{other}"),
)


def _read(e, facts):
    """Model or adapter parameters trained on validation tokens before they are scored (or scored
    again after); an update repeated on tokens scored before it; the legal score-first update."""
    if e.kind == "judgment" and VAL in e.taint and VAL in e.state:
        if e.detail == order.ADAPTED_FIRST:
            kind = (RESCORED_AFTER_PASS if "rescored" in e.flags else ADAPT_PASS if "pass" in e.flags
                    else SCORED_AGAIN if "again" in e.flags else ADAPT_THEN_SCORE)
            return [Verdict("TTT_SCORE_AFTER_ADAPT", kind, FAIL, e.site, e.other,
                            origin=e.opening if kind == ADAPT_PASS else None)]
        if e.detail == order.REPEATED_PASS and id(e.site.inner) in facts.resolved:
            return [Verdict("TTT_SCORE_AFTER_ADAPT", MULTI_EPOCH, WARN, e.site)]
    if (is_update(e) and VAL in e.taint and "broken" not in e.flags and "resolved" in e.flags
            and not order.tensor_only(e.state)):
        return [Verdict("TTT_SCORE_AFTER_ADAPT", SCORE_FIRST, INFO, e.site, e.other)]
    return []


# A helper's pass that its caller placed after export or training is judged there: its
# score-first note in the helper goes (as for any pass found to break the order).
recognizer("TTT_SCORE_AFTER_ADAPT", _read, shape=True, order=True, placed=frozenset({SCORE_FIRST}))


@check("TTT_SCORE_AFTER_ADAPT")
def ttt_score_after_adapt(sub, options):
    """What it checks: in every loop of the evaluation code that both scores validation tokens
    (adds a loss or model output on them to a running total) and updates parameters (an optimizer
    step, or an in-place update from gradients), the order of the two on the same tokens. Scoring
    first, then training, is the legal score-first TTT and is noted as INFO. Training first, or
    scoring the same tokens again in a later pass (an epoch loop around the chunk loop, a chunk
    loop that rescans the whole set, a loop that calls a score-first pass again), fails. So does
    an adaptation pass of its own over the validation tokens run after the model was written out
    (test-time training after the quantization round trip) and scored after it. Repeated passes
    over a chunk that was already scored (multi-epoch adaptation) are a warning.

    Why it matters: #1017 C3 (score before update) and the README FAQ: "you are only allowed to
    test-time train on validation set tokens you've already evaluated your model on". PRs with
    adapt-then-score or score-on-the-last-epoch TTT were closed (issue #677; PR #991). Multi-epoch
    TTT after scoring is asked about on PR #1698 without a ruling, hence a warning.

    Illegal: `for ci in chunks: train(model, chunk); total += score(model, chunk)`;
    `for epoch in range(3): for ci in chunks: ... if epoch == 2: total += nll ...; opt.step()`;
    `torch.save(quantize(model.state_dict()), f); m = load(f); ttt_adapt(m, val_tokens,
    epochs=30); eval_val(m, val_tokens)`.

    Legal: `for ci in chunks: with torch.no_grad(): total += nll(chunk); if not last: train(chunk)`
    (PR #549, #1413); per-document LoRA that scores a chunk before its Adam step (PR #77, #1530);
    phased global SGD over documents already scored (PR #1610, #1626).

    Known limits: order is read from the code, per function, through calls pgolf can resolve by
    name; a score kept only for logging inside the training phase is told apart from the reported
    one by whether its loss is backpropagated. A score and an update on different slices of the
    same tensor in one iteration are assumed to cover the same chunk. A pass of its own is read as
    evaluation-time only where a file or bytes serializer wrote the model's weights before it; with
    none, it is PREQUANT_TTT_ON_VAL (after training) or VAL_DATA_IN_TRAINING.
    """
    yield from findings(sub, "TTT_SCORE_AFTER_ADAPT")
