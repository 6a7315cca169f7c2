"""CaseOps: a lossless case transform of the tokenizer's input, and the bytes each token stands for.

The tokenizer sees lowercase ASCII words with case-operator symbols in front, so "the", "The" and
"THE" share their pieces (the idea of PR #1729, used by the records since 2026-04-19). Over each
maximal run of ASCII letters:
- a lowercase word stays as it is;
- a capitalized word ("The", "I") becomes TITLE + the word in lowercase;
- an all-capitals word of two letters or more ("NASA") becomes ALLCAPS + the word in lowercase;
- any other word ("McDonald") gets CAPNEXT before each capital letter, lowercased.
An operator character already in the text is kept as ESC + itself. Other characters (non-ASCII
letters included) are left alone. `decode` inverts `encode` exactly and accepts only what `encode`
writes.

Scores stay in bits per byte of the text before the transform: `original_bytes` gives each token
the UTF-8 bytes of the text it stands for, counting operators as none (`pgolf data --caseops`
writes them as the validation split's byte sidecar).
"""

from __future__ import annotations

import re

import numpy as np
import sentencepiece as spm

from trainer.errors import TrainerError

TITLE, ALLCAPS, CAPNEXT, ESC = "\ue001", "\ue002", "\ue003", "\ue004"  # private-use characters
OPERATORS = (TITLE, ALLCAPS, CAPNEXT, ESC)

_WORD = re.compile(r"[A-Za-z]+")
_OPERATOR = re.compile("[\ue001-\ue004]")
_LOWER_RUN = re.compile("[a-z]+")
# In the UTF-8 of encoded text: an escape pair (its ESC is the operator), or a lone operator.
# UTF-8 is self-synchronizing, so these bytes match only whole characters.
_OPERATOR_BYTES = re.compile(b"\xee\x80\x84\xee\x80[\x81-\x84]|\xee\x80[\x81-\x84]")
_OPERATOR_UTF8 = 3


class CaseOpsError(ValueError):
    """Text that no `encode` could have written."""


def _word(word: str) -> str:
    if word.islower():
        return word
    lower = word.lower()
    if len(word) > 1 and word.isupper():
        return ALLCAPS + lower
    if word[0].isupper() and (len(word) == 1 or word[1:].islower()):
        return TITLE + lower
    return "".join(CAPNEXT + c.lower() if c.isupper() else c for c in word)


def encode(text: str) -> str:
    """`text` with ASCII capitals turned into operators (see the module's docstring)."""
    out, pos = [], 0
    for m in _WORD.finditer(text):
        out += [_OPERATOR.sub(lambda o: ESC + o.group(), text[pos:m.start()]), _word(m.group())]
        pos = m.end()
    out.append(_OPERATOR.sub(lambda o: ESC + o.group(), text[pos:]))
    return "".join(out)


def decode(encoded: str) -> str:
    """The text `encode` turned into `encoded`; CaseOpsError when `encode` writes no such string."""
    out, i = [], 0
    while i < len(encoded):
        c = encoded[i]
        if c == ESC:
            if encoded[i + 1:i + 2] not in OPERATORS:
                raise CaseOpsError(f"ESC at character {i} is not followed by an operator")
            out.append(encoded[i + 1])
            i += 2
        elif c in (TITLE, ALLCAPS):
            run = _LOWER_RUN.match(encoded, i + 1)
            if run is None:
                raise CaseOpsError(f"the operator at character {i} is not followed by a lowercase word")
            word = run.group()
            out.append(word.upper() if c == ALLCAPS else word[0].upper() + word[1:])
            i = run.end()
        elif c == CAPNEXT:
            if not "a" <= encoded[i + 1:i + 2] <= "z":
                raise CaseOpsError(f"CAPNEXT at character {i} is not followed by a lowercase letter")
            out.append(encoded[i + 1].upper())
            i += 2
        else:
            out.append(c)
            i += 1
    text = "".join(out)
    # Operators in the wrong place (TITLE inside a word, an uppercase ASCII letter, ...) decode
    # to some text whose encoding differs: rejecting them makes decode the exact inverse.
    if encode(text) != encoded:
        raise CaseOpsError("not a CaseOps encoding: operators out of place or ASCII capitals left")
    return text


def normalizer() -> spm.SentencePieceNormalizer:
    """The text as the challenge's tokenizers read it: NFKC with their whitespace rules (newlines
    and tabs become spaces, runs of spaces one, none at either end). The plain tokenizers' byte
    tables count these bytes, so CaseOps scores count the same text."""
    return spm.SentencePieceNormalizer(rule_name="nmt_nfkc", add_dummy_prefix=False,
                                       escape_whitespaces=False, remove_extra_whitespaces=True)


def tokenizer_input(doc: str, norm: spm.SentencePieceNormalizer) -> str:
    """What a CaseOps tokenizer encodes for document `doc`: the normalized text, transformed.
    SentencePiece reads a literal '\u2581' as a space, so it is one here too (as the plain byte
    tables count it) and the tokens decode to exactly this string."""
    return encode(norm.normalize(doc).replace("\u2581", " "))


def piece_bytes(sp: spm.SentencePieceProcessor) -> np.ndarray:
    """int64 [V]: the UTF-8 bytes each piece writes into the text it decodes to."""
    size = np.zeros(sp.vocab_size(), dtype=np.int64)
    for i in range(sp.vocab_size()):
        if sp.is_byte(i):
            size[i] = 1
        elif not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i)):
            size[i] = len(sp.id_to_piece(i).replace("\u2581", " ").encode("utf-8"))
    return size


def original_bytes(encoded: str, ids: list[int], sizes: np.ndarray) -> np.ndarray:
    """int64 [len(ids)]: the bytes of the text before the transform that each token of `encoded`
    stands for: the bytes of its span of `encoded`, less those of the operators in it. A
    character split over byte-fallback tokens counts one byte in each. Sums to the UTF-8 length of
    `decode(encoded)`."""
    raw = encoded.encode("utf-8")
    lengths = sizes[np.asarray(ids, dtype=np.int64)]
    ends = np.cumsum(lengths)
    if int(lengths.sum()) != len(raw):
        raise TrainerError(f"the tokenizer does not reproduce its input ({len(raw)} bytes, its "
                           f"pieces {int(lengths.sum())}): a CaseOps tokenizer needs identity "
                           "normalization and byte fallback (pgolf data tokenizer --caseops)")
    counted = np.ones(len(raw) + 1, dtype=np.int64)
    counted[0] = 0  # so the cumulative sum at byte offset k is the count of bytes before k
    for m in _OPERATOR_BYTES.finditer(raw):
        counted[m.start() + 1:m.start() + 1 + _OPERATOR_UTF8] = 0
    before = np.cumsum(counted)
    return before[ends] - before[ends - lengths]


def is_caseops(sp: spm.SentencePieceProcessor) -> bool:
    """Whether the tokenizer has the operators as pieces (trained with --caseops)."""
    return all(sp.piece_to_id(op) != sp.unk_id() for op in OPERATORS)
