"""The rANS coder of quantized levels (trainer/rans.py): exact, near the entropy, and a damaged
stream raises."""

import numpy as np
import pytest

from trainer.rans import LANES, MAX_SEGMENTS, rans_decode, rans_encode


def _levels(n, sigma, seed):
    """int6-like levels as the container stores them: int8 bytes."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.normal(0, sigma, n)), -31, 31).astype(np.int8).view(np.uint8)


def test_every_segment_comes_back_exactly():
    rng = np.random.default_rng(0)
    segments = [_levels(50_000, 2.4, 1), np.zeros(0, np.uint8), np.full(777, 3, np.uint8),
                rng.integers(0, 256, 5_000).astype(np.uint8), _levels(LANES - 1, 0.3, 2),
                np.array([255], np.uint8)]
    back = rans_decode(rans_encode(segments), sum(map(len, segments)))
    assert len(back) == len(segments)
    assert all(np.array_equal(a, b) for a, b in zip(segments, back))
    assert rans_decode(rans_encode([]), 0) == []


def test_every_table_sums_to_its_scale_however_skewed():
    """Rare symbols are raised to 1; the rounding is taken from the largest entries."""
    rng = np.random.default_rng(7)
    skewed = np.concatenate([np.full(10**6, 5, np.uint8), np.arange(256, dtype=np.uint8)])
    flat = rng.integers(0, 256, 256 * 129).astype(np.uint8)  # every count near 129
    for segment in (skewed, flat, np.arange(256, dtype=np.uint8)):
        assert np.array_equal(rans_decode(rans_encode([segment]), len(segment))[0], segment)


def test_the_size_is_near_the_order0_entropy():
    segments = [_levels(200_000, 2.4, 3), _levels(100_000, 6.0, 4)]
    bits = 0.0
    for s in segments:
        p = np.bincount(s, minlength=256) / len(s)
        p = p[p > 0]
        bits += -(p * np.log2(p)).sum() * len(s)
    size = len(rans_encode(segments))
    # The tables and the lanes' final states are the overhead: a few KB.
    assert bits / 8 < size < bits / 8 * 1.002 + 4 * LANES + 1_000


@pytest.mark.parametrize("damage", ["truncate", "table"])
def test_a_damaged_stream_raises(damage):
    data = bytearray(rans_encode([_levels(20_000, 2.4, 5)]))
    if damage == "truncate":
        data = data[:len(data) // 2]
    else:
        data[11] ^= 0x40  # a frequency of the table: it no longer sums to its scale
    with pytest.raises((ValueError, IndexError)):
        rans_decode(bytes(data), 20_000)


@pytest.mark.parametrize("claim", ["segments", "symbols"])
def test_a_hostile_count_is_refused_before_allocating(claim):
    data = bytearray(rans_encode([_levels(1_000, 2.4, 6)]))
    if claim == "segments":
        data[0:4] = (MAX_SEGMENTS + 1).to_bytes(4, "little")
    else:
        data[4:8] = (2**32 - 1).to_bytes(4, "little")  # the segment's length
    with pytest.raises(ValueError, match="segments|symbols"):
        rans_decode(bytes(data), 1_000)
