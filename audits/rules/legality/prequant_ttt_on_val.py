"""PREQUANT_TTT_ON_VAL: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import order
from audits.legality.judge import Verdict, recognizer
from audits.legality.values import VAL
from audits.registry import C3, FAIL, ILLEGAL, Rule, Words, check, issue, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("PREQUANT_TTT_ON_VAL", FAIL, "legality",
         "No fine-tuning on validation tokens before they are scored.",
         (pr(1376), issue(677), pr(1902)), (C3,), level=ILLEGAL, place=2),
)
# Its readings (the keys of its words).
TRAINED_THEN_SCORED = "trained_then_scored"
WORDS = words(
    "PREQUANT_TTT_ON_VAL",
    trained_then_scored=Words(
        "validation tokens are trained on at {at} and scored after that, at {other}",
        "Do not fine-tune on validation tokens before scoring them; to adapt at test time, score "
        "each chunk first, then train on it.",
        origin="the fine-tune begins at {origin}"),
)


def _read(e, facts):
    """A fine-tune of its own on validation tokens, after training, before they are scored."""
    if e.kind == "judgment" and e.detail == order.FINE_TUNED_AFTER_TRAINING and VAL in e.taint and VAL in e.state:
        return [Verdict("PREQUANT_TTT_ON_VAL", TRAINED_THEN_SCORED, FAIL, e.site, e.other, origin=e.opening)]
    return []


recognizer("PREQUANT_TTT_ON_VAL", _read, order=True)


@check("PREQUANT_TTT_ON_VAL")
def prequant_ttt_on_val(sub, options):
    """What it checks: an update on validation tokens that runs as a separate pass, not
    interleaved with scoring: the tokens it trains on are scored only afterwards (typically an
    N-epoch AdamW fine-tune on `val_tokens` after training, before quantization and evaluation).

    Why it matters: #1017 C3; PR #1376 was closed for it and organizers excluded the whole
    cluster (#1485, #1487, #1488, #1489, #1517) as "pre-quant/future-validation leakage" (PR #1902).

    Illegal: `ttt_adapt_adamw(model, val_tokens, epochs=18)` followed by `eval_val(model, val_tokens)`.

    Legal: fine-tuning on training data; score-first TTT during evaluation.

    Known limits: a fine-tune after the model's weights were written out (the quantization round
    trip) is evaluation-time TTT_SCORE_AFTER_ADAPT; a whole-set evaluation inside the fine-tune's
    epoch loop is a diagnostic and does not make it score-first. The fine-tune and the evaluation
    must both be reached from the entry point; an update on validation data that no later score
    is found for is reported as VAL_DATA_IN_TRAINING instead.
    """
    yield from findings(sub, "PREQUANT_TTT_ON_VAL")
