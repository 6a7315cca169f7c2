"""REALIZED_TOKEN_GATE: the rule, its words and its check."""

from __future__ import annotations

from audits.registry import C1, FAIL, ILLEGAL, Rule, Words, check, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("REALIZED_TOKEN_GATE", FAIL, "legality",
         "No mixture or tilt whose gate reads the token being scored.",
         (pr(1967), pr(2018)), (C1,), level=ILLEGAL),
)
WORDS = words(
    "REALIZED_TOKEN_GATE",
    gate_reads_target=Words(
        "the weight at {at} is read from the token being scored and changes that token's "
        "probability (scored at {other})",
        "Compute gates and mixture weights from the context only (tokens before the one scored)."),
)


@check("REALIZED_TOKEN_GATE")
def realized_token_gate(sub, options):
    """What it checks: a mixture weight or tilt strength looked up from, or chosen by, the token
    being scored (`boundary[target]`, `alpha_table[target]`), applied to a probability or to a
    tilt indicator that enters the score.

    Why it matters: the gate reads x_t to shape p_t(x_t) (#1017 C1); the within-word and
    word-start experts of PRs #1967, #2018 did this and were flagged; PR #1514 disabled them.

    Illegal: `beta = torch.where(is_boundary[tgt], word_beta, within_beta)` in the tilt.

    Legal: gates from the previous token or the context (`is_boundary[prev]`); masking which
    positions count (a padding mask on the NLL).

    Known limits: a weight multiplying the NLL itself is read as a position mask, not a gate.
    """
    yield from findings(sub, "REALIZED_TOKEN_GATE")
