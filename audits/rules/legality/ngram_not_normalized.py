"""NGRAM_NOT_NORMALIZED: the rule, its words and its check."""

from __future__ import annotations

from audits.legality.judge import INFO, Verdict, recognizer
from audits.legality.values import VAL
from audits.registry import C2, FAIL, ILLEGAL, Rule, Words, check, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("NGRAM_NOT_NORMALIZED", FAIL, "legality",
         "Cache or n-gram mixtures give a distribution that sums to 1 over the vocabulary.",
         (pr(972), pr(978)), (C2,), level=ILLEGAL, place=9),
)
# Its readings (the keys of its words).
NOT_RENORMALIZED, ADD_K, RENORMALIZED = "not_renormalized", "add_k", "renormalized"
WORDS = words(
    "NGRAM_NOT_NORMALIZED",
    not_renormalized=Words(
        "the tilt at {at} boosts the scored token when it matches the hint but never renormalizes: "
        "the probabilities no longer sum to 1",
        "Divide by Z = 1 + p_hint * (exp(beta) - 1) (or subtract log Z from the log-probability)."),
    add_k=Words(
        "the n-gram probability at {at} adds the same constant to a count and to its total; summed "
        "over the vocabulary it exceeds 1",
        "Add k to every count and k times the vocabulary size to the total (or renormalize over the "
        "vocabulary)."),
    renormalized=Words("token tilt at {at} is renormalized over the vocabulary"),
)


def _read(e, facts):
    """A probability tilted toward a hinted token, renormalized or not; add-k smoothing."""
    if VAL not in e.taint:
        return []
    if e.kind == "tilt":
        if "normalized" in e.flags:
            return [Verdict("NGRAM_NOT_NORMALIZED", RENORMALIZED, INFO, e.site)]
        return [Verdict("NGRAM_NOT_NORMALIZED", NOT_RENORMALIZED, FAIL, e.site)]
    if e.kind == "smoothing":
        return [Verdict("NGRAM_NOT_NORMALIZED", ADD_K, FAIL, e.site)]
    return []


recognizer("NGRAM_NOT_NORMALIZED", _read, shape=True)


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
    `Z = 1 + p_hint * (exp(beta) - 1)` (also spelled `1 + p * expm1(beta)` or `1 - p + p * w`),
    or `log1p(p_hint * expm1(beta))`, even where p_hint is read through the log-sum-exp recovered
    from the scored token's NLL: the closed form is the exact sum of the tilted distribution, as
    long as beta is not picked by the scored token (then log Z depends on it: still a FAIL). The
    boost less one may be bound to a name first (`e = math.expm1(beta)`), and the hint's
    probability gathered by the hints' name (`logp.gather(1, hint_ids[:, None])`): the tokens a
    loss takes as targets are the scored ones, the ones only gathered are the hints.

    Known limits: general normalization cannot be decided statically; other wrong denominators
    are not found.
    """
    yield from findings(sub, "NGRAM_NOT_NORMALIZED")
