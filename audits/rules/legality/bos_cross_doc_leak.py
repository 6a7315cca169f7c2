"""BOS_CROSS_DOC_LEAK: the rule, its words and its check."""

from __future__ import annotations

import dataclasses

from audits.legality.judge import INFO, Verdict, recognizer
from audits.legality.values import kinds
from audits.registry import C1, FAIL, ILLEGAL, Rule, Words, check, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("BOS_CROSS_DOC_LEAK", FAIL, "legality",
         "Previous-token mixing paths are masked at document starts (BOS).",
         (pr(1797, "audit"), pr(1851, "fix")), (C1,), level=ILLEGAL, place=13),
)
# Its readings (the keys of its words).
UNMASKED, MASKED, PAST_CONTEXT = "unmasked", "masked", "past_context"
WORDS = words(
    "BOS_CROSS_DOC_LEAK",
    unmasked=Words(
        "previous-token mixing at {at} is not masked at document starts, while the attention "
        "keeps documents apart ({detail}): the first token of a document sees the last token of "
        "the one before",
        "Zero the gate where the current token is BOS (id 1), e.g. "
        "g = g.masked_fill(input_ids[:, 1:] == 1, 0.0) before mixing."),
    masked=Words("previous-token mixing at {at} is masked at document starts"),
    past_context=Words(
        "previous-token mixing at {at} crosses document starts, as the attention does: the "
        "evaluation does not keep documents apart, so the previous token is past context"),
)


def _read(e, facts):
    """Previous-token mixing, masked at document starts or not."""
    if e.kind != "mix":
        return []
    if kinds(e.taint, "mask"):  # a test of the ids stops it (also one a caller passed in)
        return [Verdict("BOS_CROSS_DOC_LEAK", MASKED, INFO, e.site)]
    return [Verdict("BOS_CROSS_DOC_LEAK", UNMASKED, FAIL, e.site)]


def _isolation(v, isolation):
    """Mixing across a document start leaks only where the evaluation keeps documents apart
    (`isolation` names what does): elsewhere attention itself reads the previous document, so the
    mixed token is past context like any other (an INFO note)."""
    if v.kind != UNMASKED:
        return v
    if isolation is not None:
        return dataclasses.replace(v, detail=isolation)
    return dataclasses.replace(v, kind=PAST_CONTEXT, severity=min(v.severity, INFO))


def _mask_passed_in(e) -> bool:
    """The mix rests on a parameter of its function: a mask its callers pass may stop it."""
    return any(label[0] == "param" for label in e.taint)


recognizer("BOS_CROSS_DOC_LEAK", _read, shape=True, isolation=_isolation, by_callers=_mask_passed_in)


@check("BOS_CROSS_DOC_LEAK")
def bos_cross_doc_leak(sub, options):
    """What it checks: previous-token mixing (`x[:, 1:] + g * x[:, :-1]`, or `x + g * x_prev`
    with `x_prev` built from `x[:, :-1]`) that is not masked where the current token is BOS (no
    `==`/`!=` comparison, a BOS mask, reaches the gate or the shifted term), in code whose
    attention keeps the documents of a packed row apart (`cu_seqlens`, a varlen kernel, a mask
    that compares one array with itself at the query and key positions, whatever they are called:
    `doc[b, q] == doc[b, kv]` in a mask function's third and fourth parameters, or `doc[:, :,
    None] == doc[:, None, :]`; a causal or sliding-window mask keeps nothing apart). Masked
    mixing, and mixing where attention crosses documents anyway, are INFO.

    Why it matters: where documents are scored as isolated units, the first token of a document
    must not see the previous one (#1017 C1); found in the PR #1797 audit, fixed in PR #1851.
    Where the attention already reads across document starts (the plain causal mask over packed
    rows, as in the baseline), the previous token is past context like any other: merged
    SmearGate records mix across them.

    Illegal: `x = torch.cat([x[:, :1], x[:, 1:] + g * x[:, :-1]], dim=1)` with no mask, in a model
    whose attention is `flash_attn_varlen_func(..., cu_seqlens_q=...)`.

    Legal: `g = g.masked_fill(input_ids[:, 1:] == BOS_ID, 0.0)` before mixing; the same mixing
    under a plain causal attention over packed rows.

    Known limits: shifts made with `torch.roll` or `F.pad` are not recognised; isolation is read
    anywhere in the code that runs, not traced to the scored forward pass.
    """
    yield from findings(sub, "BOS_CROSS_DOC_LEAK")
