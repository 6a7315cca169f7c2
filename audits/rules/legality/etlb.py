"""ETLB: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import order
from audits.legality.judge import INFO, WARN, Verdict, recognizer
from audits.legality.values import VAL, is_update
from audits.registry import C1, C3, FAIL, ILLEGAL, Rule, Words, check, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("ETLB", FAIL, "legality",
         "No eval-time logit bias fitted on the tokens it is applied to.",
         (pr(1399),), (C1, C3), level=ILLEGAL, place=7),
)
# Its readings (the keys of its words).
OWN_TARGETS, CONTEXT_ONLY, SCORED_BEFORE = "own_targets", "context_only", "scored_before"
WORDS = words(
    "ETLB",
    own_targets=Words(
        "a bias kept across windows is fitted at {at} on tokens it then helps score at {other}",
        "Update the bias only after a window is scored, so it only affects later windows."),
    context_only=Words(
        "a bias carried across windows is fitted at {at} on each window's context only, then "
        "applied to score its new tokens at {other}",
        "Fitting on already-scored context has no ruling yet (the question of issue #1336); expect "
        "review.", link="https://github.com/openai/parameter-golf/issues/1336"),
    scored_before=Words("the bias updated at {at} is fitted only on tokens scored before, at {other}"),
)


def _read(e, facts):
    """A tensor kept across windows fitted on validation tokens before they are scored; the legal
    update of one on tokens scored before it."""
    if e.kind == "judgment" and e.detail == order.KEPT_TENSOR_FIT and VAL in e.taint and VAL in e.state:
        if "context_only" in e.flags:
            return [Verdict("ETLB", CONTEXT_ONLY, WARN, e.site, e.other)]
        return [Verdict("ETLB", OWN_TARGETS, FAIL, e.site, e.other)]
    if (is_update(e) and VAL in e.taint and "broken" not in e.flags and "resolved" in e.flags
            and order.tensor_only(e.state)):
        return [Verdict("ETLB", SCORED_BEFORE, INFO, e.site, e.other)]
    return []


recognizer("ETLB", _read, shape=True, order=True)


@check("ETLB")
def etlb(sub, options):
    """What it checks: a bias tensor kept across windows (made once, outside the scoring loop,
    with gradients, or stepped by a gradient written by hand: `b = b - lr * (softmax - one_hot)`)
    that is fitted on a window's targets before that window is scored with it.
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
