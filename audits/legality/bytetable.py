"""Bytes-per-token tables shipped as array files (.npz, .npy), read without running anything
(numpy with pickles refused, sizes bounded) and checked against the folder's SentencePiece model:
a byte-fallback piece stands for 1 byte, a control or unknown piece for none, any other piece for
the UTF-8 bytes of its text without the leading '▁' (one space byte more where the table has no
leading-space flag for it); or against the folder's TokenMonster vocabulary: a token stands for at
most its own bytes.

    tables(sub) -> list[Table]        the byte tables of the folder's array files
    expected(sub) -> Expected | str   the bytes of each piece, or why none could be read
    inflated(table, expected) -> str  the entries counting more bytes than their token, in words
"""

from __future__ import annotations

import dataclasses
import io
import re
import zipfile

import numpy as np
import sentencepiece as spm

from audits.legality import tokenmonster
from audits.submission import read_bounded
from trainer.challenge import CAP_BYTES

# The artifact cap: no table or tokenizer of a submission is larger.
LIMIT = CAP_BYTES
MAX_ARRAYS = 64  # arrays in one .npz
ARRAY_SUFFIXES = (".npz", ".npy")
_BYTES = re.compile(r"bytes", re.I)  # base_bytes, bytes_per_token, token_bytes
_SPACE = re.compile(r"space", re.I)  # has_leading_space
_TOKENIZERS = (".model", ".vocab")
_UNJUDGED = 2**40  # bytes allowed for a token whose count is not judged


@dataclasses.dataclass(frozen=True)
class Table:
    rel: str  # the file
    name: str  # the array in it ("" for a .npy)
    values: np.ndarray | None  # bytes per token id; None when the file could not be read
    space: np.ndarray | None = None  # the file's leading-space flags per id, when it has them
    error: str = ""  # why the file could not be read

    @property
    def label(self) -> str:
        return f"{self.rel}[{self.name}]" if self.name else self.rel


@dataclasses.dataclass(frozen=True)
class Expected:
    rel: str  # the tokenizer
    bytes: np.ndarray  # the bytes each token stands for (at most), without a leading '▁'
    spaced: np.ndarray  # the piece starts with '▁'
    kind: tuple[str, ...]  # "byte-fallback", "control", "single-byte", "text"


def tables(sub) -> list[Table]:
    """The byte tables of the folder's .npz and .npy files (arrays named for bytes), and the files
    that may hold one but cannot be read as plain arrays (hostile or broken)."""
    out = []
    for entry in sorted(sub.entries, key=lambda e: e.rel):
        if entry.kind != "file" or not entry.rel.lower().endswith(ARRAY_SUFFIXES):
            continue
        if entry.rel.lower().endswith(".npy") and not _BYTES.search(entry.rel):
            continue
        try:
            data, longer = read_bounded(sub.root / entry.rel, LIMIT)
            if longer:
                raise ValueError(f"over {LIMIT:,} bytes")
            out += _read(entry.rel, data)
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
            out.append(Table(entry.rel, "", None, error=f"it cannot be read as plain arrays: {_short(e)}"))
    return out


def _read(rel: str, data: bytes) -> list[Table]:
    if rel.lower().endswith(".npy"):
        array = _array(data)
        return [Table(rel, "", array)] if _is_table(array) else []
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        wanted = [i for i in infos if _BYTES.search(i.filename) or _SPACE.search(i.filename)]
        if len(infos) > MAX_ARRAYS or sum(i.file_size for i in wanted) > LIMIT:
            raise ValueError(f"over {MAX_ARRAYS} arrays or {LIMIT:,} bytes of tables unpacked")
        arrays = {i.filename.removesuffix(".npy"): _array(archive.read(i)) for i in wanted}
    space = next((a for name, a in arrays.items() if _SPACE.search(name) and a.ndim == 1), None)
    return [Table(rel, name, a, space) for name, a in sorted(arrays.items())
            if _BYTES.search(name) and _is_table(a)]


def _array(data: bytes) -> np.ndarray:
    """One .npy, its header checked first: a shape declaring more bytes than the file holds
    would make numpy allocate it before reading."""
    head = io.BytesIO(data)
    version = np.lib.format.read_magic(head)
    header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in header:
        raise ValueError(f"npy version {version} is not read")
    shape, _, dtype = header[version](head)
    if dtype.hasobject:
        raise ValueError("it holds Python objects (a pickle)")
    if int(np.prod(shape, dtype=np.float64)) * dtype.itemsize > len(data):
        raise ValueError(f"its header declares shape {shape}, more than the file holds")
    return np.load(io.BytesIO(data), allow_pickle=False)


def _is_table(array: np.ndarray) -> bool:
    return array.ndim == 1 and array.dtype.kind in "iu" and array.size > 0


def _short(error: Exception) -> str:
    return str(error).splitlines()[0][:120] if str(error) else type(error).__name__


def expected(sub) -> Expected | str:
    """The bytes each token of the folder's tokenizer stands for at most (a SentencePiece .model,
    else a TokenMonster .vocab), or why there is none to check against."""
    names = sorted(e.rel for e in sub.entries if e.kind == "file" and e.rel.lower().endswith(_TOKENIZERS))
    if not names:
        return "no tokenizer (SentencePiece .model or TokenMonster .vocab) is shipped in the folder"
    why = []
    for rel in sorted(names, key=lambda r: not r.lower().endswith(".model")):
        try:
            data, longer = read_bounded(sub.root / rel, LIMIT)
        except OSError as e:
            why.append(f"{rel} cannot be read ({_short(e)})")
            continue
        if longer:
            why.append(f"{rel} is over {LIMIT:,} bytes")
            continue
        found = _sentencepiece(rel, data) if rel.lower().endswith(".model") else _tokenmonster(rel, data)
        if isinstance(found, Expected):
            return found
        why.append(found)
    return "; ".join(why)


def _sentencepiece(rel: str, data: bytes) -> Expected | str:
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(data)
    except RuntimeError as e:
        return f"{rel} is not a SentencePiece model ({_short(e)})"
    kinds, counts, spaced = [], [], []
    for i in range(sp.vocab_size()):
        piece = sp.id_to_piece(i)
        if sp.is_byte(i):
            kinds.append("byte-fallback"), counts.append(1), spaced.append(False)
        elif sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            kinds.append("control"), counts.append(0), spaced.append(False)
        else:
            lead = piece.startswith("\u2581")
            kinds.append("text"), spaced.append(lead)
            counts.append(len(piece[1:].encode("utf-8")) if lead else len(piece.encode("utf-8")))
    return Expected(rel, np.array(counts, dtype=np.int64), np.array(spaced, dtype=bool), tuple(kinds))


def _tokenmonster(rel: str, data: bytes) -> Expected | str:
    """A token stands for at most its own bytes: capital and delete markers decode to fewer. Only
    a token of several bytes outside ASCII may grow when capcode capitalises its characters: it is
    not judged (a single byte is no character to capitalise)."""
    vocab = tokenmonster.read(data)
    if isinstance(vocab, str):
        return f"{rel} is {vocab}"
    if vocab.charset == 2:
        return f"{rel} is a UTF-16 TokenMonster vocabulary, whose bytes are not counted here"
    tokens = [t if t is not None else b"" for t in vocab.tokens]
    counts = [len(t) if vocab.capcode == 0 or len(t) <= 1 or t.isascii() else _UNJUDGED for t in tokens]
    kinds = tuple("single-byte" if len(t) == 1 else "text" for t in tokens)
    return Expected(rel, np.array(counts, dtype=np.int64), np.zeros(len(tokens), dtype=bool), kinds)


def inflated(table: Table, exp: Expected) -> str:
    """The entries of `table` that count more bytes than their token stands for, as runs of ids
    ("base_bytes[75..101]=3 for byte-fallback pieces of 1 byte"), or "" when there are none. With
    leading-space flags, a flagged token's space comes from its flag, not its entry."""
    n = min(table.values.size, exp.bytes.size)
    values = table.values[:n].astype(np.int64)
    flags = (table.space[:n].astype(bool) if table.space is not None and table.space.size >= n
             else np.zeros(n, dtype=bool))
    allowed = exp.bytes[:n] + exp.spaced[:n] - flags
    over = np.nonzero(values > allowed)[0]
    runs: list[list[int]] = []
    for i in over.tolist():
        last = runs[-1][-1] if runs else None
        if last is not None and i == last + 1 and (values[i], allowed[i], exp.kind[i]) == (
                values[last], allowed[last], exp.kind[last]):
            runs[-1].append(i)
        else:
            runs.append([i])
    words = [f"{table.name or 'entry'}[{r[0]}{'..' + str(r[-1]) if len(r) > 1 else ''}]={values[r[0]]} "
             f"for {exp.kind[r[0]]} {_noun(exp)}{'s' if len(r) > 1 else ''} of {allowed[r[0]]} byte"
             f"{'' if allowed[r[0]] == 1 else 's'}" for r in runs[:4]]
    if len(runs) > 4:
        words.append(f"{over.size} entries in all")
    return "; ".join(words)


def _noun(exp: Expected) -> str:
    return "piece" if exp.rel.lower().endswith(".model") else "token"
