"""BOS_CROSS_DOC_LEAK: the rule, its words and its check."""

from __future__ import annotations

from audits.registry import C1, FAIL, ILLEGAL, Rule, Words, check, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("BOS_CROSS_DOC_LEAK", FAIL, "legality",
         "Previous-token mixing paths are masked at document starts (BOS).",
         (pr(1797, "audit"), pr(1851, "fix")), (C1,), level=ILLEGAL),
)
WORDS = words(
    "BOS_CROSS_DOC_LEAK",
    unmasked=Words(
        "previous-token mixing at {at} is not masked at document starts: the first token of a "
        "document sees the last token of the one before",
        "Zero the gate where the current token is BOS (id 1), e.g. "
        "g = g.masked_fill(input_ids[:, 1:] == 1, 0.0) before mixing."),
    masked=Words("previous-token mixing at {at} is masked at document starts"),
)


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
