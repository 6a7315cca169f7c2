"""BPB_BYTE_ACCOUNTING: the rule, its words and its check."""

from __future__ import annotations

import re

import libcst as cst

from audits import legality
from audits.findings import Severity
from audits.registry import ILLEGAL, WARN, Rule, Words, check, found, issue, pr, rules, words
from audits.rules.legality.evidence import findings
from audits.submission import trees

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
    sidecar=Words(
        "{at} names the per-token byte sidecar (fineweb_val_bytes_*.bin): bytes per token can be "
        "counted from it, as the original text's bytes each validation token stands for (how a "
        "transformed tokenizer input such as CaseOps keeps bits per byte on the original text)"),
)
# The byte sidecar's files, as the CaseOps records and `pgolf data shards --caseops` name them:
# fineweb_val_bytes_NNNNNN.bin beside each fineweb_val_NNNNNN.bin.
_SIDECAR_NAME = re.compile(r"val_bytes_")


@check("BPB_BYTE_ACCOUNTING")
def bpb_byte_accounting(sub, options):
    """What it checks: bits per byte divided by a fixed bytes-per-token literal, and a
    bytes-per-token table built from tokenizer pieces that does not count byte-fallback pieces
    as 1 byte or does not turn the leading '▁' into one space byte. A table that handles both is
    noted as INFO.

    Why it matters: the byte count is the denominator of the score; the Scylla record was removed
    for a +4.13% byte count (PR #1806), issue #897 shows the leading-space error.

    Illegal: `val_bpb = val_loss / math.log(2) / 3.6`; `lut[i] = len(sp.id_to_piece(i).encode())`.

    A script that names the per-token byte sidecar's files (`fineweb_val_bytes_*.bin`, in code,
    not in a comment or docstring) is noted as INFO: bytes per token can come from it.

    Legal: the baseline's `build_sentencepiece_luts` (is_byte -> 1, strip '▁', count it when the
    previous token is not a boundary); a per-token byte sidecar.

    Known limits: tables built without a loop over token ids, and custom tokenizers, are not
    judged; that a sidecar's counts reach the denominator, and that they sum to the original
    text's bytes, is not traced (`pgolf data verify` checks a sidecar against its shards).
    """
    yield from findings(sub, "BPB_BYTE_ACCOUNTING")
    yield from _sidecar_findings(sub)


def _strings(node):
    """The string literals that make up expression `node`, if it is a string."""
    if isinstance(node, cst.ConcatenatedString):
        yield from _strings(node.left)
        yield from _strings(node.right)
    elif isinstance(node, cst.FormattedString):
        yield from (p for p in node.parts if isinstance(p, cst.FormattedStringText))
    elif isinstance(node, cst.SimpleString):
        yield node


def _sidecar_findings(sub):
    """One INFO per script at the first string of its code that names the byte sidecar's files
    (docstrings and other bare strings name nothing)."""
    for rel, parsed in sorted(legality.analyse(sub).scripts.items()):
        ranges = trees.positions(parsed.module).ranges  # every node, recorded once per module
        bare = {id(part) for n in ranges if isinstance(n, cst.Expr) for part in _strings(n.value)}
        named = [start for n, (start, _) in ranges.items()
                 if isinstance(n, (cst.SimpleString, cst.FormattedStringText)) and id(n) not in bare
                 and _SIDECAR_NAME.search(n.value)]
        if not named:
            continue
        line, column = min(named)
        shipped = sub.scripts.get(rel)
        yield found("BPB_BYTE_ACCOUNTING", WORDS["sidecar"].message.format(at=f"line {line}"),
                    severity=Severity.INFO, file=rel, line=line, column=column,
                    evidence=f"{line}: {parsed.excerpt(line, line)}",
                    via=shipped.via(line) if shipped is not None else None, confidence="high")
