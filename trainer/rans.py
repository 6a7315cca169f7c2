"""An entropy coder for quantized levels: interleaved rANS (Duda 2013), one static table per segment.

Brotli and lzma model bytes by their context and matches; int6 levels of a matrix are close to
independent draws from one distribution, so their order-0 entropy is what is left to remove, and
brotli-11 stays about 1.6% above it (docs/export.md). rANS codes each symbol at its table's
probability to within a few bits per segment.

Segments (one quantized matrix's levels each) share one coder state per lane: `LANES` states
advance together, lane j taking symbols j, j + LANES, ..., so each step is a few numpy operations
over all lanes. States live in [2^16, 2^32) and are renormalized by 16-bit words. Each segment's
table is its symbol counts scaled to 2^15, every present symbol at least 1.

Stream: u32 segment count; per segment u32 length, u8 first symbol, u16 table size, then the
table's u16 frequencies; the LANES final states (u32); u32 word count; the words (u16).
"""

from __future__ import annotations

import struct

import numpy as np

PROB_BITS = 15
M = 1 << PROB_BITS
LOW = 1 << 16  # a state's lower bound
LANES = 1024
MAX_SEGMENTS = 4096  # a model has one per quantized matrix (about 130): bounds what a read allocates


def _table(segment: np.ndarray) -> tuple[int, np.ndarray]:
    """(first symbol, frequencies summing to M) of a non-empty uint8 segment."""
    counts = np.bincount(segment, minlength=256).astype(np.int64)
    present = np.nonzero(counts)[0]
    lo, hi = int(present[0]), int(present[-1]) + 1
    counts = counts[lo:hi]
    freqs = np.where(counts > 0, np.maximum(1, counts * M // counts.sum()), 0)
    excess = int(freqs.sum()) - M  # from rounding down, or up to 1 for rare symbols
    while excess > 0:  # taken from the largest entries, none below 1
        i = int(np.argmax(freqs))
        take = min(excess, int(freqs[i]) - 1)
        freqs[i] -= take
        excess -= take
    freqs[np.argmax(freqs)] -= excess
    return lo, freqs


def rans_encode(segments: list[np.ndarray]) -> bytes:
    """The stream for these uint8 arrays (any lengths, empty ones included)."""
    n = sum(len(s) for s in segments)
    head = [struct.pack("<I", len(segments))]
    freq = np.zeros((len(segments), 256), dtype=np.int64)
    for i, seg in enumerate(segments):
        lo, f = _table(seg) if len(seg) else (0, np.zeros(0, dtype=np.int64))
        freq[i, lo:lo + len(f)] = f
        head.append(struct.pack("<IBH", len(seg), lo, len(f)) + f.astype("<u2").tobytes())
    cum = np.cumsum(freq, axis=1) - freq
    symbols = np.concatenate(segments) if segments else np.zeros(0, dtype=np.uint8)
    ends = np.cumsum([len(s) for s in segments])
    x = np.full(LANES, LOW, dtype=np.uint64)
    words = []
    for t in reversed(range(-(-n // LANES))):
        pos = t * LANES + np.arange(min(LANES, n - t * LANES))
        seg = np.searchsorted(ends, pos, side="right")
        s = symbols[pos]
        f, c = freq[seg, s].astype(np.uint64), cum[seg, s].astype(np.uint64)
        xa = x[:len(pos)]
        out = xa >= (f << np.uint64(2 * 16 - PROB_BITS))
        words.append((xa[out] & np.uint64(0xFFFF)).astype("<u2"))
        xa[out] >>= np.uint64(16)
        x[:len(pos)] = ((xa // f) << np.uint64(PROB_BITS)) + xa % f + c
    stream = np.concatenate(words[::-1]) if words else np.zeros(0, dtype="<u2")
    return (b"".join(head) + x.astype("<u4").tobytes() + struct.pack("<I", len(stream))
            + stream.tobytes())


def rans_decode(data: bytes, max_symbols: int) -> list[np.ndarray]:
    """The uint8 arrays `rans_encode` was given. Raises ValueError on a malformed stream, and
    before allocating for more than MAX_SEGMENTS segments or `max_symbols` symbols."""
    (count,), at = struct.unpack_from("<I", data), 4
    if count > MAX_SEGMENTS:
        raise ValueError(f"{count} segments (at most {MAX_SEGMENTS})")
    lengths, freq = [], np.zeros((count, 256), dtype=np.int64)
    for i in range(count):
        length, lo, size = struct.unpack_from("<IBH", data, at)
        at += 7
        if lo + size > 256:
            raise ValueError("a table runs past symbol 255")
        freq[i, lo:lo + size] = np.frombuffer(data, "<u2", size, at)
        at += 2 * size
        if length and freq[i].sum() != M:
            raise ValueError("a table does not sum to its scale")
        lengths.append(length)
    if sum(lengths) > max_symbols:
        raise ValueError(f"{sum(lengths):,} symbols, more than the {max_symbols:,} expected")
    cum = np.cumsum(freq, axis=1) - freq
    slot_symbol = np.zeros((count, M), dtype=np.uint8)  # which symbol owns each slot of [0, M)
    for i in range(count):
        slot_symbol[i] = np.repeat(np.arange(256), freq[i]) if freq[i].sum() == M else 0
    x = np.frombuffer(data, "<u4", LANES, at).astype(np.uint64)
    at += 4 * LANES
    (nwords,) = struct.unpack_from("<I", data, at)
    words = np.frombuffer(data, "<u2", nwords, at + 4).astype(np.uint64)
    n, ends = sum(lengths), np.cumsum(lengths)
    out, w = np.empty(n, dtype=np.uint8), 0
    for t in range(-(-n // LANES)):
        pos = t * LANES + np.arange(min(LANES, n - t * LANES))
        seg = np.searchsorted(ends, pos, side="right")
        xa = x[:len(pos)]
        slot = xa & np.uint64(M - 1)
        s = slot_symbol[seg, slot]
        f, c = freq[seg, s].astype(np.uint64), cum[seg, s].astype(np.uint64)
        xa = f * (xa >> np.uint64(PROB_BITS)) + slot - c
        need = xa < LOW
        k = int(need.sum())
        if w + k > nwords:
            raise ValueError("the stream ends early")
        xa[need] = (xa[need] << np.uint64(16)) | words[w:w + k]
        w += k
        x[:len(pos)] = xa
        out[pos] = s
    return np.split(out, ends[:-1]) if count else []
