"""BYTE_MIXTURE_NOT_NORMALIZED: the rule, its words and its check."""

from __future__ import annotations

from audits.legality.judge import Verdict, recognizer
from audits.legality.values import VAL, is_score, kinds
from audits.registry import C2, FAIL, ILLEGAL, Rule, Words, check, issue, pr, rules, words
from audits.rules.legality.evidence import findings
from audits.rules.legality.native_evidence import native_findings

RULES = rules(
    Rule("BYTE_MIXTURE_NOT_NORMALIZED", FAIL, "legality",
         "Byte-level model mixtures still give a normalized distribution over tokens.",
         (issue(1872), pr(1902)), (C2,), level=ILLEGAL, place=11),
)
# Its readings (the keys of its words).
OWN_BYTES, SPREAD = "own_bytes", "spread"
WORDS = words(
    "BYTE_MIXTURE_NOT_NORMALIZED",
    own_bytes=Words(
        "probabilities of the scored token's own bytes ({at}) are mixed into its score at {other}; "
        "the result is not a distribution over the token vocabulary",
        "Mix distributions over the whole vocabulary and normalize before reading the target's "
        "probability."),
    spread=Words(
        "the {language} loop at {at} divides the position's loss by a count looked up at the token "
        "read at {other} (its own bytes) in code that mixes probabilities: the token's probability "
        "spread over its bytes and mixed per byte is not a distribution over the token vocabulary",
        "Mix distributions over the whole vocabulary and normalize before reading the target's "
        "probability."),
)


def _read(e, facts):
    """A score of validation tokens that mixes in a distribution over the token's own bytes."""
    if not is_score(e) or VAL not in e.taint:
        return []
    return [Verdict("BYTE_MIXTURE_NOT_NORMALIZED", OWN_BYTES, FAIL, label[1], e.site)
            for label in kinds(e.taint, "bytes")]


recognizer("BYTE_MIXTURE_NOT_NORMALIZED", _read, shape=True)


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

    Also read: loops over positions outside the interpreter's reach, in native code a script of
    the run loads (C/C++, shipped or embedded in a string) and in Python functions the run calls
    on gathered arrays: `nn_logp = -nll[i] / lens[tid]` with `tid = target[i]`, in code that mixes
    probabilities (log-sum-exp, a weight and `1 - lam`).

    Known limits: recognises byte tables indexed by the target and tokenizer decode calls on it;
    native code and gathered arrays are read lexically, loop by loop.
    """
    yield from findings(sub, "BYTE_MIXTURE_NOT_NORMALIZED")
    yield from native_findings(sub, "BYTE_MIXTURE_NOT_NORMALIZED", "spread", SPREAD)
