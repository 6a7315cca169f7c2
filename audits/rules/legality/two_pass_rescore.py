"""TWO_PASS_RESCORE: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import order
from audits.legality.judge import Verdict, recognizer
from audits.legality.values import VAL, is_score, kinds
from audits.registry import C4, FAIL, ILLEGAL, Rule, Words, check, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("TWO_PASS_RESCORE", FAIL, "legality",
         "Each token is scored once; no second pass and no picking the better pass.",
         (pr(846), pr(853), pr(959), pr(659)), (C4,), level=ILLEGAL, place=10),
)
# Its readings (the keys of its words).
SECOND_PASS, RESCORED_AFTER_ADAPT, BETTER_OF_TWO = "second_pass", "rescored_after_adapt", "better_of_two"
WORDS = words(
    "TWO_PASS_RESCORE",
    second_pass=Words(
        "a first pass over the validation tokens scores them and fills the table at {at}; a second "
        "pass reads it at {other} and scores them again",
        "Score in one left-to-right pass; update the table only with tokens already scored.",
        origin="the second pass begins at {origin}"),
    rescored_after_adapt=Words(
        "the validation tokens are scored again at {at}, after the pass at {other} scored them and "
        "trained on them",
        "Report the score of the one pass that scored each token before training on it."),
    better_of_two=Words(
        "the score at {other} keeps the better of two predictions, chosen at {at} by comparing "
        "their losses on the true token",
        "Commit to one prediction per token, or mix predictors with weights computed from the "
        "context only."),
)


def _read(e, facts):
    """Validation tokens scored in a second pass (after a pass that scored them, or filled a table
    from them); a score that picks the better of two losses."""
    if e.kind == "judgment" and e.detail == order.SCORED_TWICE and VAL in e.taint and VAL in e.state:
        if "pass" in e.flags:
            return [Verdict("TWO_PASS_RESCORE", RESCORED_AFTER_ADAPT, FAIL, e.site, e.other)]
        return [Verdict("TWO_PASS_RESCORE", SECOND_PASS, FAIL, e.site, e.other, origin=e.opening)]
    if (is_score(e) or e.kind == "picked") and VAL in e.taint:
        return [Verdict("TWO_PASS_RESCORE", BETTER_OF_TWO, FAIL, label[1], e.site, switches=label[2])
                for label in kinds(e.taint, "select")]
    return []


recognizer("TWO_PASS_RESCORE", _read, shape=True)


@check("TWO_PASS_RESCORE")
def two_pass_rescore(sub, options):
    """What it checks: a score that keeps the better of two predictions chosen by comparing their
    losses on the true token (`min` of two NLLs, `argmin` over stored passes, the larger of two
    probabilities of the token, a best-so-far carried round a loop over checkpoints or epochs), a
    first pass that scores the validation tokens while filling a table that a second pass reads
    to score them again, a pass that scores them while adapting to them (score-first TTT)
    followed by a second scoring pass with the adapted model, and a loop that repeats such a
    pass over the same tokens (the last or best epoch's score reported).

    Why it matters: #1017 C4 (one left-to-right pass, no picking by outcome); PRs #846, #853,
    #959 (two-pass full rescore) and #659 (min of model and n-gram NLL) were ruled out.

    Illegal: `nll = torch.minimum(nll_model, nll_cache)`; `for m in checkpoints: best =
    torch.minimum(best, nll(m))`; pass 1 fills `cache` and sums NLL, pass 2 rescores with
    `cache`; `eval_with_ttt(model, val_tokens); eval_val(model, val_tokens)`.

    Legal: one pass, mixing with weights from the context only; an average of several models'
    distributions; a minimum over settings tried on training data.

    Known limits: rescoring after training is TTT_SCORE_AFTER_ADAPT's finding; after a pass that
    also scored, both rules report it. A rescore on a copy read back from the artifact afresh is
    not one.
    """
    yield from findings(sub, "TWO_PASS_RESCORE")
