"""REALIZED_TOKEN_GATE: the rule, its words and its check."""

from __future__ import annotations

from audits.legality.judge import Verdict, recognizer
from audits.legality.values import VAL, is_score, kinds
from audits.registry import C1, FAIL, ILLEGAL, Rule, Words, check, pr, rules, words
from audits.rules.legality.evidence import findings
from audits.rules.legality.native_evidence import native_findings

RULES = rules(
    Rule("REALIZED_TOKEN_GATE", FAIL, "legality",
         "No mixture or tilt whose gate reads the token being scored.",
         (pr(1967), pr(2018)), (C1,), level=ILLEGAL, place=12),
)
# Its readings (the keys of its words).
GATE_READS_TARGET, NATIVE_GATE = "gate_reads_target", "native_gate"
WORDS = words(
    "REALIZED_TOKEN_GATE",
    gate_reads_target=Words(
        "the weight at {at} is read from the token being scored and changes that token's "
        "probability (scored at {other})",
        "Compute gates and mixture weights from the context only (tokens before the one scored)."),
    native_gate=Words(
        "the {language} loop branches at {at} on a table looked up at the token read at {other}, and "
        "the branch decides the outputs for that token's position before the token enters the "
        "state: the hint for a token is gated by the token itself",
        "Gate on the context (the previous token, the state before the position), never on the "
        "token the position predicts."),
)


def _read(e, facts):
    """A gate read from the scored token that reached a score of validation tokens: a table lookup
    always counts; a comparison only where it weighted a probability, since a padding mask on the
    NLL is a comparison too. (A mixture over the token's own bytes is its own rule.)"""
    if not is_score(e) or VAL not in e.taint or kinds(e.taint, "bytes"):
        return []
    gates = {label[1] for label in kinds(e.taint, "gated")}
    gates |= {label[1] for label in kinds(e.taint, "gate") if label[2] == "lookup"}
    return [Verdict("REALIZED_TOKEN_GATE", GATE_READS_TARGET, FAIL, site, e.site)
            for site in sorted(gates, key=lambda s: s.path)]


recognizer("REALIZED_TOKEN_GATE", _read, shape=True)


@check("REALIZED_TOKEN_GATE")
def realized_token_gate(sub, options):
    """What it checks: a mixture weight or tilt strength looked up from, or chosen by, the token
    being scored (`boundary[target]`, `alpha_table[target]`), applied to a probability or to a
    tilt indicator that enters the score.

    Why it matters: the gate reads x_t to shape p_t(x_t) (#1017 C1); the within-word and
    word-start experts of PRs #1967, #2018 did this and were flagged; PR #1514 disabled them.

    Illegal: `beta = torch.where(is_boundary[tgt], word_beta, within_beta)` in the tilt.

    Legal: gates from the previous token or the context (`is_boundary[prev]`); masking which
    positions count (a padding mask on the NLL); the scored tokens' bytes summed into the total
    that divides the loss (bits per byte), wherever the result is kept.

    Also read: native code (C/C++) that a script of the run loads (ctypes, cffi, a torch
    extension), shipped as a file or embedded in a string: in a loop over positions `i`, a branch
    on a table looked up at `tok = tokens[i]` that decides what is written for position `i`
    (`if (!boundary_lut[tok]) hint_prob[i] = ...`), where `tok` enters the state only afterwards.

    Known limits: a weight multiplying the NLL itself is read as a position mask, not a gate.
    Native code is read lexically (no preprocessor, no calls followed): a gate in a helper
    function the loop calls is not seen.
    """
    yield from findings(sub, "REALIZED_TOKEN_GATE")
    yield from native_findings(sub, "REALIZED_TOKEN_GATE", "gate", NATIVE_GATE)

