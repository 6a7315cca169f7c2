"""Bytes-per-token tables shipped as array files (.npz, .npy), read without running anything
(numpy with pickles refused, sizes bounded) and checked against the folder's SentencePiece model:
a byte-fallback piece stands for 1 byte, a control or unknown piece for none, any other piece for
the UTF-8 bytes of its text without the leading '▁' (one space byte more where the table has no
leading-space flag for it).

    tables(sub) -> list[Table]        the byte tables of the folder's array files
    expected(sub) -> Expected | str   the bytes of each piece, or why none could be read
    inflated(table, expected) -> str  the entries counting more bytes than their piece, in words
"""

from __future__ import annotations

import dataclasses
import io
import re
import zipfile

import numpy as np
import sentencepiece as spm

from audits.submission import read_bounded

LIMIT = 16_000_000  # the artifact cap: no table or tokenizer of a submission is larger
MAX_ARRAYS = 64  # arrays in one .npz
ARRAY_SUFFIXES = (".npz", ".npy")
_BYTES = re.compile(r"bytes", re.I)  # base_bytes, bytes_per_token, token_bytes
_SPACE = re.compile(r"space", re.I)  # has_leading_space


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
    rel: str  # the tokenizer model
    bytes: np.ndarray  # what each piece stands for, without its leading space
    spaced: np.ndarray  # the piece starts with '▁'
    kind: tuple[str, ...]  # "byte-fallback", "control", "text"


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
        array = np.load(io.BytesIO(data), allow_pickle=False)
        return [Table(rel, "", array)] if _is_table(array) else []
    with zipfile.ZipFile(io.BytesIO(data)) as archive:  # bounded before numpy inflates a member
        infos = archive.infolist()
        wanted = [i.filename for i in infos if _BYTES.search(i.filename) or _SPACE.search(i.filename)]
        if len(infos) > MAX_ARRAYS or sum(i.file_size for i in infos if i.filename in wanted) > LIMIT:
            raise ValueError(f"over {MAX_ARRAYS} arrays or {LIMIT:,} bytes of tables unpacked")
    if not any(_BYTES.search(name) for name in wanted):
        return []
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files
                  if _BYTES.search(name) or _SPACE.search(name)}
    space = next((a for name, a in arrays.items() if _SPACE.search(name) and a.ndim == 1), None)
    return [Table(rel, name, a, space) for name, a in sorted(arrays.items())
            if _BYTES.search(name) and _is_table(a)]


def _is_table(array: np.ndarray) -> bool:
    return array.ndim == 1 and array.dtype.kind in "iu" and array.size > 0


def _short(error: Exception) -> str:
    return str(error).splitlines()[0][:120] if str(error) else type(error).__name__


def expected(sub) -> Expected | str:
    """What each piece of the folder's SentencePiece model stands for, or why there is none."""
    models = sorted(e.rel for e in sub.entries if e.kind == "file" and e.rel.lower().endswith(".model"))
    if not models:
        return "no SentencePiece model (.model) is shipped in the folder"
    rel = models[0]
    try:
        data, longer = read_bounded(sub.root / rel, LIMIT)
        if longer:
            return f"{rel} is over {LIMIT:,} bytes"
        sp = spm.SentencePieceProcessor()
        sp.LoadFromSerializedProto(data)
    except (OSError, RuntimeError) as e:
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
    return Expected(rel, np.array(counts, dtype=np.int64), np.array(spaced), tuple(kinds))


def inflated(table: Table, exp: Expected) -> str:
    """The entries of `table` that count more bytes than their piece stands for, as runs of ids
    ("base_bytes[75..101]=3 for byte-fallback pieces of 1 byte"), or "" when there are none."""
    n = min(table.values.size, exp.bytes.size)
    values = table.values[:n].astype(np.int64)
    allowed = exp.bytes[:n].copy()
    # a table without leading-space flags may count the space in the piece's own bytes
    flagged = table.space[:n].astype(bool) if table.space is not None and table.space.size >= n else None
    allowed += exp.spaced[:n] & (True if flagged is None else ~flagged)
    over = np.nonzero(values > allowed)[0]
    runs: list[list[int]] = []
    for i in over.tolist():
        last = runs[-1][-1] if runs else None
        same = last is not None and i == last + 1 and (values[i], allowed[i], exp.kind[i]) == (
            values[last], allowed[last], exp.kind[last])
        if same:
            runs[-1].append(i)
        else:
            runs.append([i])
    words = [f"{table.name or 'entry'}[{r[0]}{'..' + str(r[-1]) if len(r) > 1 else ''}]={values[r[0]]} "
             f"for {exp.kind[r[0]]} piece{'s' if len(r) > 1 else ''} of {allowed[r[0]]} byte"
             f"{'' if allowed[r[0]] == 1 else 's'}" for r in runs[:4]]
    if len(runs) > 4:
        words.append(f"{over.size} entries in all")
    return "; ".join(words)
