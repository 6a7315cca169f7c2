import lzma
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer import compress, preflight, quant
from trainer.config import load_config
from trainer.errors import TrainerError
from trainer.files import write_atomic
from trainer.rans import rans_encode
from tinylm import tiny_model


def _quantized():
    state = tiny_model().state_dict()
    q = quant.quantize_state_dict(state, {}, embeddings={"tok_emb.weight"},
                                  matrix_bits=6, embed_bits=8, matrix_clip_sigmas=12.85,
                                  embed_clip_sigmas=20.0)
    w = state["blocks.0.fc.weight"]  # AWQ-lite's groups: a sixth header field, a second scale
    q["blocks.0.fc.weight"] = quant.quantize_gptq(w, torch.eye(w.shape[1]), 12.85, 6, [(0, 16), (48, 64)])
    q["odd.bf16"] = torch.randn(5, 3).to(torch.bfloat16)
    q["odd.scalar"] = torch.tensor(2.5)
    q["odd.mask"] = torch.tensor([True, False, True])
    q["odd.count"] = torch.tensor([1, 2, 3], dtype=torch.int64)
    q["odd.empty"] = torch.empty(0, 4, dtype=torch.float16)
    return q


def _same(a, b):
    assert list(a) == list(b)
    for name in a:
        x, y = a[name], b[name]
        if isinstance(x, quant.QTensor):
            assert torch.equal(x.q, y.q) and torch.equal(x.scale, y.scale) and x.bits == y.bits
            assert x.fine == y.fine and (x.fine_scale is None) == (y.fine_scale is None)
            assert x.fine_scale is None or torch.equal(x.fine_scale, y.fine_scale)
        else:
            assert x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)


@given(st.binary(max_size=64).map(lambda b: b[: len(b) // 4 * 4]), st.sampled_from([1, 2, 4]))
@settings(max_examples=50, deadline=None)
def test_unshuffle_inverts_shuffle(data, width):
    assert compress.byte_unshuffle(compress.byte_shuffle(data, width), width) == data


def test_container_roundtrip_is_bit_exact():
    q = _quantized()
    _same(q, compress.unpack_tensors(compress.pack_tensors(q)))


@pytest.mark.parametrize("method", ["brotli", "lzma", "rans"])
def test_artifact_roundtrip_through_a_file_is_bit_exact(tmp_path, method):
    q = _quantized()
    path = tmp_path / "model.pga"
    write_atomic(path, compress.compress_artifact(compress.pack_tensors(q), method))
    _same(q, compress.read_artifact(path))
    assert [p.name for p in tmp_path.iterdir()] == ["model.pga"]  # no temporary left behind


def test_rans_gives_each_class_of_a_matrix_columns_its_own_table():
    """A third of the columns narrow, as a trained projection's less active inputs: tables per
    class of columns code the levels smaller than one table for the matrix, and read back."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(256, 512, generator=g) * torch.where(torch.arange(512) % 3 == 0, 0.2, 1.0)
    q = {"m": quant.quantize_rtn(w, 12.85, 6), "flags": torch.tensor([True, False])}
    container = compress.pack_tensors(q)
    by_class = compress.compress_artifact(container, "rans")
    _same(q, compress.unpack_tensors(compress.decompress_artifact(by_class)))
    one_table = rans_encode(compress._rans_split(container, classes=1)[0])
    assert len(rans_encode(compress._rans_split(container)[0])) < 0.95 * len(one_table)


def test_a_rans_artifact_whose_header_claims_more_levels_is_refused_before_allocating():
    """The levels decoded must fill exactly the 1-byte tensors the container's header lists,
    checked before the matrices it claims are built."""
    q = {"m": quant.quantize_rtn(torch.randn(64, 64), 12.85, 6)}
    container = compress.pack_tensors(q)
    segments, tail = compress._rans_split(container)
    lying = tail.replace(b"[64,64]", b"[96,64]")  # 96 rows claimed, 64 coded
    with pytest.raises(ValueError, match="do not fill the container's 1-byte tensors"):
        compress._rans_join(segments, lying)


def test_brotli_compresses_the_container_in_pieces_apart():
    """As the module docstring lays it out, so each piece can be compressed in its own thread."""
    import brotli

    container = compress.pack_tensors(_quantized())
    n, k = len(container), compress.PIECES
    payload = compress.compress_artifact(container, "brotli")[compress._PREFIX.size:]
    lengths = struct.unpack_from(f"<{k}I", payload)
    streams, at = [], 4 * k
    for length in lengths:
        streams.append(payload[at:at + length])
        at += length
    assert at == len(payload)
    assert [brotli.decompress(b) for b in streams] == [container[i * n // k:(i + 1) * n // k]
                                                       for i in range(k)]


def test_byte_shuffle_makes_fp16_weights_smaller():
    half = (torch.randn(200_000) * 0.02).to(torch.float16).numpy().tobytes()
    plain = len(lzma.compress(half))
    shuffled = len(lzma.compress(compress.byte_shuffle(half, 2)))
    assert shuffled < 0.95 * plain


def test_both_methods_are_reported_and_each_reads_back(tmp_path):
    q = _quantized()
    built = compress.compress_all(compress.pack_tensors(q))
    assert set(built) == {"brotli", "lzma"}
    for data, seconds in built.values():
        assert isinstance(data, bytes) and seconds > 0
        _same(q, compress.unpack_tensors(compress.decompress_artifact(data)))


def test_a_missing_brotli_is_found_before_any_work(monkeypatch):
    monkeypatch.setattr(compress, "find_spec", lambda name: None)
    with pytest.raises(compress.CompressorUnavailable, match="pip install brotli, or set COMPRESSOR"):
        compress.require_compressor("brotli")
    compress.require_compressor("lzma")
    # The run's preflight, before any training, stops on it unless the run will not export.
    with pytest.raises(TrainerError, match="pip install brotli"):
        preflight.check_compressor(load_config({"PRESET": "tiny"}))
    preflight.check_compressor(load_config({"PRESET": "tiny", "PREQUANT_ONLY": "1"}))


@pytest.fixture(scope="module")
def brotli_artifact():
    return compress.compress_artifact(compress.pack_tensors(_quantized()), "brotli")


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "other_file", "bad_method"])
def test_damaged_artifacts_give_one_clear_line(tmp_path, damage, brotli_artifact):
    data = bytearray(brotli_artifact)
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) - 1000]
    elif damage == "empty":
        data = bytearray()
    elif damage == "other_file":
        data = bytearray(b"PK\x03\x04 a zip, not an artifact")
    elif damage == "bad_method":
        data[4] = 9
    path = tmp_path / "model.pga"
    path.write_bytes(bytes(data))
    with pytest.raises(compress.ArtifactError) as info:
        compress.read_artifact(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))


def test_missing_artifact_is_one_line(tmp_path):
    with pytest.raises(compress.ArtifactError, match="cannot read the artifact"):
        compress.read_artifact(tmp_path / "absent.pga")


def test_the_compressor_sample_covers_the_whole_container_in_proportion():
    piece, pieces = compress.PIECE_BYTES, compress.SAMPLE_PIECES
    container = bytes(range(256)) * (3 * pieces * piece // 256)  # 1.5x the sample size
    sample = compress.container_sample(container)
    assert len(sample) == pieces * piece
    assert sample[:piece] == container[:piece] and sample[-piece:] == container[-piece:]
    assert compress.container_sample(container[:piece * pieces]) == container[:piece * pieces]
