import numpy as np
import pytest

from trainer.errors import TrainerError
from trainer.shards import HEADER_BYTES, open_shard, shard_paths, shard_token_count, write_shard


def test_round_trip_and_exact_layout(tmp_path):
    tokens = np.array([1, 5, 65535, 0, 7], dtype=np.int64)
    path = tmp_path / "fineweb_train_000000.bin"
    write_shard(path, tokens)
    raw = path.read_bytes()
    assert len(raw) == HEADER_BYTES + 2 * tokens.size
    header = np.frombuffer(raw[:HEADER_BYTES], dtype="<i4")
    assert list(header[:3]) == [20240520, 1, 5] and not header[3:].any()
    assert np.frombuffer(raw[HEADER_BYTES:], dtype="<u2").tolist() == tokens.tolist()
    assert shard_token_count(path) == 5
    assert open_shard(path).tolist() == tokens.tolist()


def test_ids_must_fit_uint16(tmp_path):
    with pytest.raises(ValueError):
        write_shard(tmp_path / "x.bin", np.array([65536]))


def _corrupt(path, offset, value):
    raw = bytearray(path.read_bytes())
    raw[offset:offset + 4] = np.array([value], dtype="<i4").tobytes()
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage, message", [
    (lambda p: _corrupt(p, 0, 123), "not a token shard: magic 123 version 1"),
    (lambda p: _corrupt(p, 4, 2), "not a token shard: magic 20240520 version 2"),
    (lambda p: _corrupt(p, 8, 11), "the header says 11 tokens (1046 bytes) but the file has 1044"),
    (lambda p: p.write_bytes(p.read_bytes()[:-2]), "the header says 10 tokens (1044 bytes) but the "
                                                   "file has 1042"),
    (lambda p: p.write_bytes(b"short"), "shorter than the 1024-byte header"),
])
def test_malformed_shards_are_named_in_one_line(tmp_path, damage, message):
    path = tmp_path / "fineweb_train_000000.bin"
    write_shard(path, np.arange(10))
    damage(path)
    with pytest.raises(TrainerError) as info:
        open_shard(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_shard_discovery(tmp_path):
    with pytest.raises(TrainerError, match="does not exist"):
        shard_paths(tmp_path / "missing", "train")
    with pytest.raises(TrainerError, match="no fineweb_val_"):
        shard_paths(tmp_path, "val")
    for name in ("fineweb_val_000001.bin", "fineweb_val_000000.bin", "fineweb_val_bytes_000000.bin"):
        write_shard(tmp_path / name, np.arange(3))
    # CaseOps' byte sidecars share the prefix and are not token shards of the split.
    assert [p.name for p in shard_paths(tmp_path, "val")] == ["fineweb_val_000000.bin",
                                                               "fineweb_val_000001.bin"]
