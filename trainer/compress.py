"""The artifact: quantized tensors in a compact container, byte-shuffled, then brotli-11 or lzma.

Container (`pack_tensors`): b"PGQ1", a little-endian u32 header length, a JSON header listing every tensor
(name, kind, dtype, shape, bits) in order, then one section per element width (1, 2, 4, 8 bytes)
holding the tensors' bytes in header order. A quantized matrix puts its int8 levels in the 1-byte
section and its fp16 row scales in the 2-byte section; one with AWQ-lite's column groups lists
them as a sixth header field, [[start, end], ...], and its second row scales follow the first.
Each section is byte-shuffled with its element width as the stride: the k-th byte of every
element is stored together, so the repetitive sign/exponent bytes of fp16 values form long runs
(byte shuffle + brotli: PR #1089).

Artifact (`compress_artifact`): b"PGA2", a method byte (1 brotli, 2 lzma, 3 rans), the CRC-32 and
length of the container, then the compressed container. rans: u32 length of trainer/rans.py's
stream of the 1-byte section, that stream (a quantized matrix in `COLUMN_CLASSES` segments, its
columns grouped by spread), then lzma of the rest of the container followed by each matrix's
column classes (u8 per column). brotli compresses `PIECES` equal slices apart, in parallel
threads (it releases the GIL), its payload starting with the streams' lengths (u32 each): that
runs in a fraction of one stream's time and comes out no larger; lzma stays one stream, as slices
made it larger (benchmarks/compress_speed.py, docs/export.md). Any damage is reported as one
ArtifactError line.
"""

from __future__ import annotations

import json
import lzma
import os
import struct
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from trainer.extras import EXTRAS
from trainer.quant import QTensor
from trainer.rans import rans_decode, rans_encode

CONTAINER_MAGIC = b"PGQ1"
ARTIFACT_MAGIC = b"PGA2"  # PGA1 held one brotli stream
PIECES = 8  # brotli's slices
COLUMN_CLASSES = 4  # rans: tables per quantized matrix
_OFFSET = np.uint8(0x80)  # rans codes int8 as offset binary: a table spans only the levels used
_PREFIX = struct.Struct("<4sBII")  # magic, method, crc32, container length
METHODS = {"brotli": 1, "lzma": 2, "rans": 3}
GENERAL = ("brotli", "lzma")  # what COMPRESSOR=best tries: rans reads a whole container's layout
_WIDTHS = (1, 2, 4, 8)
_DTYPES = {str(d)[6:]: d for d in (torch.int8, torch.uint8, torch.bool, torch.float16, torch.bfloat16,
                                   torch.int16, torch.float32, torch.int32, torch.float64, torch.int64)}
BROTLI_WINDOW = 24  # the largest window (16 MiB): the whole model fits in one window


class ArtifactError(ValueError):
    """An artifact that cannot be read back; the message is one line naming the file and why."""


class CompressorUnavailable(ValueError):
    """COMPRESSOR names a method whose library is not installed."""


def byte_shuffle(data: bytes, width: int) -> bytes:
    """Group byte k of every `width`-byte element together (k = 0..width-1)."""
    if width == 1:
        return data
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, width).T.tobytes()


def byte_unshuffle(data: bytes, width: int) -> bytes:
    if width == 1:
        return data
    return np.frombuffer(data, dtype=np.uint8).reshape(width, -1).T.tobytes()


def _raw(t: Tensor) -> bytes:
    return t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def pack_tensors(quantized: dict[str, QTensor | Tensor]) -> bytes:
    """The container bytes for a quantized state dict (see the module docstring)."""
    header, sections = [], {w: [] for w in _WIDTHS}
    for name, v in quantized.items():
        if isinstance(v, QTensor):
            header.append([name, "q", "int8", list(v.q.shape), v.bits] +
                          ([[list(g) for g in v.fine]] if v.fine else []))
            sections[1].append(_raw(v.q))
            sections[2].append(_raw(v.scale.to(torch.float16)))
            if v.fine:
                sections[2].append(_raw(v.fine_scale.to(torch.float16)))
        else:
            header.append([name, "raw", str(v.dtype)[6:], list(v.shape), 0])
            sections[v.element_size()].append(_raw(v))
    head = json.dumps({"tensors": header}, separators=(",", ":")).encode()
    body = [byte_shuffle(b"".join(sections[w]), w) for w in _WIDTHS]
    sizes = struct.pack("<4Q", *(len(b) for b in body))
    return CONTAINER_MAGIC + struct.pack("<I", len(head)) + head + sizes + b"".join(body)


def _layout(blob: bytes) -> tuple[list, tuple[int, ...], int]:
    """A container's header entries, its section sizes, and where its sections start."""
    (head_len,) = struct.unpack_from("<I", blob, 4)
    header = json.loads(blob[8:8 + head_len])["tensors"]
    return header, struct.unpack_from("<4Q", blob, 8 + head_len), 8 + head_len + 32


def unpack_tensors(blob: bytes) -> dict[str, QTensor | Tensor]:
    """Inverse of `pack_tensors`. Raises ArtifactError on anything inconsistent (the checks are
    extras: a record run reads only the container it has just written)."""
    try:
        if EXTRAS and blob[:4] != CONTAINER_MAGIC:  # the checks are for a file of unknown origin
            raise ArtifactError("not a pgolf tensor container")
        header, sizes, offset = _layout(blob)
        if EXTRAS and offset + sum(sizes) != len(blob):
            raise ArtifactError("section sizes do not add up to the container's length")
        sections = {}
        for width, size in zip(_WIDTHS, sizes):
            sections[width] = memoryview(byte_unshuffle(blob[offset:offset + size], width))
            offset += size
        return _read_tensors(header, sections)
    except (struct.error, ValueError, KeyError, TypeError, IndexError, RuntimeError) as exc:
        if isinstance(exc, ArtifactError):
            raise
        raise ArtifactError(f"malformed container ({type(exc).__name__}: {exc})") from None


def _read_tensors(header: list, sections: dict[int, memoryview]) -> dict[str, QTensor | Tensor]:
    cursor = {w: 0 for w in _WIDTHS}

    def take(dtype: torch.dtype, shape: list[int]) -> Tensor:
        width = torch.empty((), dtype=dtype).element_size()
        n = int(np.prod(shape, dtype=np.int64)) * width
        start = cursor[width]
        if EXTRAS and start + n > len(sections[width]):
            raise ArtifactError("a tensor runs past the end of its section")
        cursor[width] = start + n
        data = bytearray(sections[width][start:start + n])
        return torch.frombuffer(data, dtype=torch.uint8).view(dtype).reshape(shape) if n else \
            torch.empty(shape, dtype=dtype)

    out: dict[str, QTensor | Tensor] = {}
    for name, kind, dtype, shape, bits, *fine in header:
        if kind == "q":
            out[name] = QTensor(take(torch.int8, shape), take(torch.float16, shape[:1]), bits, "stored")
            if fine:
                out[name].fine = [(int(a), int(b)) for a, b in fine[0]]
                out[name].fine_scale = take(torch.float16, shape[:1])
        elif kind == "raw":
            out[name] = take(_DTYPES[dtype], shape)
        else:
            raise ArtifactError(f"unknown tensor kind {kind!r}")
    if EXTRAS and any(cursor[w] != len(sections[w]) for w in _WIDTHS):
        raise ArtifactError("sections hold bytes no tensor uses")
    return out


def compress_artifact(container: bytes, method: str) -> bytes:
    """The artifact bytes: prefix, then the container compressed with `method`."""
    if method == "brotli":
        import brotli  # imported here: only the brotli path needs the package
        n = len(container)
        pieces = [container[i * n // PIECES:(i + 1) * n // PIECES] for i in range(PIECES)]
        streams = _in_parallel(lambda p: brotli.compress(p, quality=11, lgwin=BROTLI_WINDOW), pieces)
        payload = struct.pack(f"<{PIECES}I", *map(len, streams)) + b"".join(streams)
    elif method == "lzma":
        payload = lzma.compress(container, preset=9 | lzma.PRESET_EXTREME)
    elif method == "rans":
        segments, rest = _rans_split(container)
        coded = rans_encode(segments)
        payload = struct.pack("<I", len(coded)) + coded + lzma.compress(rest, preset=9 | lzma.PRESET_EXTREME)
    else:
        raise ValueError(f"unknown compression method {method!r}")
    return _PREFIX.pack(ARTIFACT_MAGIC, METHODS[method], zlib.crc32(container), len(container)) + payload


def _column_classes(q: np.ndarray, classes: int) -> np.ndarray:
    """uint8 [cols]: each column of a matrix's levels in one of `classes` classes, by the
    quantiles of its mean |level|. A trained matrix's input columns differ in spread (the MLP's
    projection: some hidden units are far less active than others), so one table per class codes
    its levels smaller than one table for the whole matrix."""
    spread = np.abs(q.view(np.int8).astype(np.int16)).mean(axis=0)
    edges = np.quantile(spread, np.linspace(0, 1, classes + 1)[1:-1])
    return np.searchsorted(edges, spread).astype(np.uint8)


def _one_byte_tensors(header: list) -> list[tuple[str, list[int], int]]:
    """(kind, shape, elements) of each tensor of the container's 1-byte section, in order: the
    levels of the quantized matrices ("q") and the raw 1-byte tensors."""
    return [(kind, shape, int(np.prod(shape, dtype=np.int64))) for _, kind, dtype, shape, *_ in header
            if kind == "q" or _DTYPES[dtype].itemsize == 1]


def _rans_split(container: bytes, classes: int = COLUMN_CLASSES) -> tuple[list[np.ndarray], bytes]:
    """For rans: the container's 1-byte section as segments of one table each (a quantized
    matrix's levels class by class of its columns, a raw 1-byte tensor whole), and what lzma
    takes: the rest of the container, then every matrix's column classes. (`classes` other than
    COLUMN_CLASSES is for measuring: `_rans_join` reads COLUMN_CLASSES.)"""
    header, sizes, start = _layout(container)
    section = np.frombuffer(container, np.uint8, sizes[0], start)
    segments, columns, at = [], [], 0
    for kind, shape, n in _one_byte_tensors(header):
        if kind == "q":
            q = section[at:at + n].reshape(shape)
            cls = _column_classes(q, classes)
            segments += [q[:, cls == k].ravel() ^ _OFFSET for k in range(classes)]
            columns.append(cls.tobytes())
        else:
            segments.append(section[at:at + n] ^ _OFFSET)
        at += n
    return segments, container[:start] + container[start + sizes[0]:] + b"".join(columns)


def _rans_join(segments: list[np.ndarray], tail: bytes) -> bytes:
    """The container `_rans_split` took apart into `segments` and `tail`."""
    header, _, start = _layout(tail)
    tensors = _one_byte_tensors(header)
    if sum(map(len, segments)) != sum(n for _, _, n in tensors):  # before allocating what it claims
        raise ValueError("the coded levels do not fill the container's 1-byte tensors")
    n_columns = sum(shape[1] for kind, shape, _ in tensors if kind == "q")
    rest = tail[:len(tail) - n_columns]
    columns = np.frombuffer(tail, np.uint8, n_columns, len(tail) - n_columns)  # their classes
    parts, pending, at = [], iter(segments), 0
    for kind, shape, _ in tensors:
        if kind == "q":
            cls, q = columns[at:at + shape[1]], np.zeros(shape, np.uint8)
            at += shape[1]
            for k in range(COLUMN_CLASSES):
                q[:, cls == k] = next(pending).reshape(shape[0], -1) ^ _OFFSET
            parts.append(q.tobytes())
        else:
            parts.append((next(pending) ^ _OFFSET).tobytes())
    return rest[:start] + b"".join(parts) + rest[start:]


def _in_parallel(fn: Callable[[bytes], bytes], pieces: list[bytes]) -> list[bytes]:
    with ThreadPoolExecutor(max_workers=min(len(pieces), os.cpu_count() or 1)) as pool:
        return list(pool.map(fn, pieces))


def compress_all(container: bytes) -> dict[str, tuple[bytes | str, float]]:
    """The artifact under every method, compressed in parallel threads (both libraries release
    the GIL), with the seconds each took. A method that cannot run here gives the reason
    instead of bytes, e.g. brotli not installed."""
    def attempt(method: str) -> tuple[bytes | str, float]:
        t0 = time.perf_counter()
        try:
            return compress_artifact(container, method), time.perf_counter() - t0
        except ImportError as exc:
            return f"not available ({exc})", 0.0
    with ThreadPoolExecutor(max_workers=len(GENERAL)) as pool:
        return dict(zip(GENERAL, pool.map(attempt, GENERAL)))


# 2 MiB: brotli-11 compresses it in a moment (docs/benchmarks.md, "Figures behind the code's choices")
SAMPLE_PIECES, PIECE_BYTES = 32, 65_536


def container_sample(container: bytes) -> bytes:
    """Evenly spaced pieces of the container, 2 MiB in all (the whole container when smaller):
    every section in proportion, so the method that compresses it smaller wins in full too."""
    if len(container) <= SAMPLE_PIECES * PIECE_BYTES:
        return container
    last = len(container) - PIECE_BYTES
    starts = (i * last // (SAMPLE_PIECES - 1) for i in range(SAMPLE_PIECES))
    return b"".join(container[s:s + PIECE_BYTES] for s in starts)


def require_compressor(choice: str) -> None:
    """Stop before any work when COMPRESSOR names a method this machine cannot run."""
    if choice == "brotli" and find_spec("brotli") is None:
        raise CompressorUnavailable("COMPRESSOR=brotli but the brotli package is not installed: "
                                    "pip install brotli, or set COMPRESSOR=lzma or best")


def decompress_artifact(artifact: bytes, label: str = "artifact") -> bytes:
    """The container inside an artifact, checked against its length and CRC-32 (not in a record
    bundle, whose run reads back only the artifact it has just written)."""
    if EXTRAS and (len(artifact) < _PREFIX.size or artifact[:4] != ARTIFACT_MAGIC):
        raise ArtifactError(f"{label}: not a pgolf artifact (bad header; truncated or another file)")
    _, method, crc, length = _PREFIX.unpack_from(artifact)
    payload = artifact[_PREFIX.size:]
    if not EXTRAS:  # a record run reads back only the artifact it has just written
        return _decompressed(method, payload, label, length)
    try:
        container = _decompressed(method, payload, label, length)
    except ImportError as exc:
        raise ArtifactError(f"{label}: compressed with brotli, which is not installed ({exc})") from None
    except (lzma.LZMAError, EOFError) as exc:
        raise ArtifactError(f"{label}: corrupted or truncated lzma data ({exc})") from None
    except Exception as exc:  # brotli.error is not importable without brotli
        if isinstance(exc, ArtifactError):
            raise
        name = {v: k for k, v in METHODS.items()}[method]
        raise ArtifactError(f"{label}: corrupted or truncated {name} data ({exc})") from None
    if len(container) != length or zlib.crc32(container) != crc:
        raise ArtifactError(f"{label}: corrupted (length or CRC-32 of the content does not match)")
    return container


def _decompressed(method: int, payload: bytes, label: str, length: int) -> bytes:
    if method == METHODS["brotli"]:
        import brotli
        ends = np.cumsum(struct.unpack_from(f"<{PIECES}I", payload)) + 4 * PIECES
        starts = [4 * PIECES, *ends[:-1]]
        return b"".join(_in_parallel(brotli.decompress, [payload[a:b] for a, b in zip(starts, ends)]))
    if method == METHODS["lzma"]:
        return lzma.decompress(payload)
    if method == METHODS["rans"]:
        (n,) = struct.unpack_from("<I", payload)
        return _rans_join(rans_decode(payload[4:4 + n], length), lzma.decompress(payload[4 + n:]))
    raise ArtifactError(f"{label}: unknown compression method byte {method}")


def read_artifact(path: Path) -> dict[str, QTensor | Tensor]:
    """The quantized state dict stored at `path`. Raises ArtifactError with one line on damage."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read the artifact ({exc.strerror})") from None
    try:
        return unpack_tensors(decompress_artifact(data, str(path)))
    except ArtifactError as exc:
        msg = str(exc)
        raise ArtifactError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None
