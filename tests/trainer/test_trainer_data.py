import numpy as np
import pytest
import torch

from trainer.data import TrainLoader, WindowStream, load_validation_tokens
from trainer.distributed import Dist
from trainer.errors import TrainerError
from trainer.fa4 import bounds_of
from trainer.shards import BOS_ID, write_shard

CPU = torch.device("cpu")


def _windows(counts, seq_len, phase):
    return {(s, phase + j * seq_len) for s, n in enumerate(counts)
            for j in range(max(n - 1 - phase, 0) // seq_len)}


def test_each_epoch_covers_every_window_once():
    counts, seq_len = [1000, 517, 40], 16
    stream = WindowStream(counts, seq_len, seed=3)
    start = 0
    for _ in range(3):  # three epochs, each with its own phase and order
        shard, offset = stream.windows(start, 1)
        phase = int(offset[0]) % seq_len
        expected = _windows(counts, seq_len, phase)
        shards, offsets = stream.windows(start, len(expected))
        seen = list(zip(shards.tolist(), offsets.tolist()))
        assert set(seen) == expected and len(seen) == len(expected)
        start += len(expected)


def test_windows_stay_inside_their_shard():
    counts, seq_len = [300, 45, 129], 32
    stream = WindowStream(counts, seq_len, seed=0)
    shards, offsets = stream.windows(0, 200)
    assert all(o + seq_len + 1 <= counts[s] for s, o in zip(shards.tolist(), offsets.tolist()))


def test_order_depends_on_the_seed_only():
    a = WindowStream([5000], 8, seed=1).windows(0, 50)
    b = WindowStream([5000], 8, seed=1).windows(0, 50)
    c = WindowStream([5000], 8, seed=2).windows(0, 50)
    assert np.array_equal(a[1], b[1]) and not np.array_equal(a[1], c[1])


def test_too_short_training_data_is_named():
    with pytest.raises(TrainerError, match="no complete window"):
        WindowStream([10], 16, seed=0)


@pytest.fixture
def train_files(tmp_path):
    """Two shards with disjoint token ranges, so a window crossing shards would show."""
    files = [tmp_path / "fineweb_train_000000.bin", tmp_path / "fineweb_train_000001.bin"]
    write_shard(files[0], np.arange(2, 2 + 3000) % 1000)
    write_shard(files[1], 1000 + np.arange(2000) % 1000)
    return files


def _batches(loader, n):
    out = [loader.next_batch() for _ in range(n)]
    loader.close()
    return out


def test_batches_are_shifted_windows_from_one_shard(train_files):
    for x, y, bounds in _batches(TrainLoader(train_files, 16, 4, Dist(), 0, CPU, prefetch=2), 20):
        assert x.dtype == torch.int64 and x.shape == (4, 16) and bounds is None
        assert torch.equal(x[:, 1:], y[:, :-1])
        full = torch.cat([x, y[:, -1:]], dim=1)
        assert ((full < 1000).all(dim=1) | (full >= 1000).all(dim=1)).all()


@pytest.mark.parametrize("prefetch", [0, 2])
def test_segment_bounds_come_from_the_host_copy_and_compile_once(tmp_path, prefetch):
    """The bounds of x as the in-graph op finds them (a segment at every BOS and at each window's
    start, windows cut to a shorter seq_len included), made on the host; one graph compiled with
    dynamic=False takes every count of them."""
    files = [tmp_path / "fineweb_train_000000.bin"]
    rng = np.random.default_rng(0)
    write_shard(files[0], rng.choice([BOS_ID, 5, 6, 7, 8], size=4000))  # documents of any length
    loader = TrainLoader(files, 16, 4, Dist(), 0, CPU, prefetch=prefetch, segment_bounds=True)
    graphs = []
    compiled = torch.compile(lambda b: b * 2, backend=lambda gm, _: graphs.append(gm) or gm.forward,
                             fullgraph=True, dynamic=False)
    counts = set()
    for seq_len in (16, 8):
        for _ in range(6):
            x, y, bounds = loader.next_batch(seq_len)
            assert x.shape == y.shape == (64 // seq_len, seq_len)
            assert bounds.dtype == torch.int32 and torch.equal(bounds, bounds_of(x))
            assert torch.equal(compiled(bounds), 2 * bounds)
            counts.add(len(bounds))
    loader.close()
    assert len(counts) > 3 and len(graphs) == 1


def test_prefetching_changes_nothing(train_files):
    sync = _batches(TrainLoader(train_files, 16, 4, Dist(), 5, CPU, prefetch=0), 30)
    ahead = _batches(TrainLoader(train_files, 16, 4, Dist(), 5, CPU, prefetch=3), 30)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(sync, ahead))


def test_ranks_split_the_single_process_order(train_files):
    """World 2 (4 accumulation steps) sees the same global batches as world 1 (8 steps)."""
    one = _batches(TrainLoader(train_files, 16, 4, Dist(0, 1), 7, CPU), 16)
    ranks = [_batches(TrainLoader(train_files, 16, 4, Dist(r, 2), 7, CPU), 8) for r in (0, 1)]
    for k in range(8):
        for r in (0, 1):
            assert torch.equal(ranks[r][k][0], one[2 * k + r][0])
    again = _batches(TrainLoader(train_files, 16, 4, Dist(1, 2), 7, CPU), 8)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(again, ranks[1]))


def test_validation_tokens_are_all_shards_in_order(tmp_path):
    files = [tmp_path / "fineweb_val_000000.bin", tmp_path / "fineweb_val_000001.bin"]
    write_shard(files[0], np.arange(0, 50))
    write_shard(files[1], np.arange(50, 75))
    tokens = load_validation_tokens(files, seq_len=16)
    assert tokens.dtype == torch.int32 and tokens.tolist() == list(range(65))  # 1 + 4 * 16
    with pytest.raises(TrainerError, match="shorter than one EVAL_SEQ_LEN=128"):
        load_validation_tokens(files, seq_len=128)
