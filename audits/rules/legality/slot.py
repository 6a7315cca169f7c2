"""SLOT: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import order
from audits.legality.judge import WARN, Verdict, recognizer
from audits.legality.values import VAL
from audits.registry import C1, C3, FAIL, ILLEGAL, Rule, Words, check, issue, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("SLOT", FAIL, "legality",
         "No per-window parameters optimized on the window's own targets and then used to "
         "score them.",
         (pr(1240, "proof of the violation"), issue(1336)), (C1, C3), level=ILLEGAL, place=6),
)
# Its readings (the keys of its words).
OWN_TARGETS, CONTEXT_ONLY = "own_targets", "context_only"
WORDS = words(
    "SLOT",
    own_targets=Words(
        "parameters made for each window are optimized at {at} on the window's own targets, then "
        "used to score them at {other}",
        "Remove the per-window optimization: a window's score may not depend on its own tokens."),
    context_only=Words(
        "parameters made for each window are fitted at {at} on the window's context only, then used "
        "to score its new tokens at {other}",
        "Context-only SLOT has no ruling yet (issue #1336); expect review.",
        link="https://github.com/openai/parameter-golf/issues/1336"),
)


def _read(e, facts):
    """Parameters made for each window fitted on validation tokens before they are scored."""
    if e.kind != "judgment" or e.detail != order.WINDOW_FIT or not (VAL in e.taint and VAL in e.state):
        return []
    if "context_only" in e.flags:
        return [Verdict("SLOT", CONTEXT_ONLY, WARN, e.site, e.other)]
    return [Verdict("SLOT", OWN_TARGETS, FAIL, e.site, e.other)]


recognizer("SLOT", _read, shape=True, order=True)


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
