"""BPB_BYTE_ACCOUNTING: the rule, its words and its check."""

from __future__ import annotations

from audits.registry import ILLEGAL, WARN, Rule, Words, check, issue, pr, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("BPB_BYTE_ACCOUNTING", WARN, "legality",
         "Bytes per token come from the tokenizer's pieces (leading space, byte fallback, "
         "control tokens handled).",
         (issue(1017, "section V"), pr(1806, "Scylla record removed"), issue(897)), level=ILLEGAL),
)

_FALLBACK = "byte-fallback pieces (<0x41>) are counted by the length of their text, 6 bytes instead of 1"
_SPACE = "the leading '\u2581' is not turned into one space byte"
_HINT = ("Count byte-fallback pieces as 1 byte, strip '\u2581' and count it as one space byte (only "
         "where the previous token is not a boundary).")
WORDS = words(
    "BPB_BYTE_ACCOUNTING",
    no_byte_fallback=Words(f"the bytes-per-token table built at {{at}}: {_FALLBACK}", _HINT),
    no_leading_space=Words(f"the bytes-per-token table built at {{at}}: {_SPACE}", _HINT),
    no_fallback_no_space=Words(f"the bytes-per-token table built at {{at}}: {_FALLBACK}; {_SPACE}", _HINT),
    fixed_ratio=Words(
        "bits per byte at {at} divide by a fixed bytes-per-token ratio instead of counting bytes",
        "Count each scored token's bytes from the tokenizer's pieces (or a per-token byte sidecar) "
        "and divide the summed bits by the summed bytes."),
    pieces=Words(
        "bytes per token at {at} are counted from the tokenizer's pieces (byte fallback and leading "
        "space handled)"),
)


@check("BPB_BYTE_ACCOUNTING")
def bpb_byte_accounting(sub, options):
    """What it checks: bits per byte divided by a fixed bytes-per-token literal, and a
    bytes-per-token table built from tokenizer pieces that does not count byte-fallback pieces
    as 1 byte or does not turn the leading '▁' into one space byte. A table that handles both is
    noted as INFO.

    Why it matters: the byte count is the denominator of the score; the Scylla record was removed
    for a +4.13% byte count (PR #1806), issue #897 shows the leading-space error.

    Illegal: `val_bpb = val_loss / math.log(2) / 3.6`; `lut[i] = len(sp.id_to_piece(i).encode())`.

    Legal: the baseline's `build_sentencepiece_luts` (is_byte -> 1, strip '▁', count it when the
    previous token is not a boundary); a per-token byte sidecar.

    Known limits: tables built without a loop over token ids, and custom tokenizers, are not
    judged.
    """
    yield from findings(sub, "BPB_BYTE_ACCOUNTING")
