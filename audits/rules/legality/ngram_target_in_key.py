"""NGRAM_TARGET_IN_KEY: the rule, its words and its check."""

from __future__ import annotations

from audits.legality.judge import INFO, Verdict, first_line, recognizer
from audits.legality.values import TARGET, VAL, kinds
from audits.registry import C2, FAIL, ILLEGAL, Rule, Words, check, issue, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("NGRAM_TARGET_IN_KEY", FAIL, "legality",
         "No hashed n-gram cache whose key includes the token being scored.",
         (pr(779, "ruled disallowed"), issue(677), pr(1514, "the legal renormalized tilt")), (C2,),
        level=ILLEGAL, place=8),
)
# Its readings (the keys of its words).
TARGET_IN_KEY, CONTEXT_KEY = "target_in_key", "context_key"
WORDS = words(
    "NGRAM_TARGET_IN_KEY",
    target_in_key=Words(
        "the table read at {at} uses a key hashed from the token being scored, so only that token's "
        "entry is looked up",
        "Hash the context only, read a distribution over the whole vocabulary (or a hint token), "
        "renormalize, then evaluate it at the target.",
        origin="its key takes the scored token at {origin}"),
    context_key=Words("n-gram table read at {at} with a key hashed from the context only"),
)


def _read(e, facts):
    """A table read with a hashed key while validation tokens are scored: is the scored token in
    the key?"""
    if e.kind != "lookup" or VAL not in e.taint:
        return []
    if TARGET in e.taint:
        made = sorted((label[1] for label in kinds(e.taint, "keyed")), key=first_line)
        return [Verdict("NGRAM_TARGET_IN_KEY", TARGET_IN_KEY, FAIL, e.site, origin=made[0] if made else None)]
    if "module" in e.flags:
        return []
    return [Verdict("NGRAM_TARGET_IN_KEY", CONTEXT_KEY, INFO, e.site)]


recognizer("NGRAM_TARGET_IN_KEY", _read, shape=True)


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
    The finding names the line where the scored token enters the key (when that line is in the
    script of the reads), the reads following in its message and evidence.
    """
    yield from findings(sub, "NGRAM_TARGET_IN_KEY")
