"""Training batches and validation tokens from memory-mapped shards.

Training reads whole `seq_len + 1` windows at multiples of `seq_len` from a random phase, in a
seeded random order over all train shards, epoch after epoch (the shuffled-sequence loader of
PR #1394, made global so it works with fewer shards than ranks). The order is one stream shared by
every rank: micro-batch k of rank r is the (k * world + r)-th block of the stream, so a run on 1 GPU
with 8 accumulation steps sees the same global batches as a run on 8 GPUs, each epoch covers every
window once, and a window never leaves its shard (so it never mixes train and validation text).

A background thread assembles the next batches into pinned host buffers and the copy to the GPU is
non_blocking (the prefetching of PRs #785 and #1532), so reading the memory map is off the critical
path; `wait_ms` says how long the training loop still waited for data.
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

import numpy as np
import torch

from trainer.distributed import Dist
from trainer.errors import TrainerError
from trainer.fa4 import bounds_of
from trainer.shards import open_shard, read_sidecar


class WindowStream:
    """The global order of training windows: (shard, start) for stream positions 0, 1, 2, ..."""

    def __init__(self, token_counts: list[int], seq_len: int, seed: int):
        self.counts = np.asarray(token_counts, dtype=np.int64)
        self.seq_len = seq_len
        self.seed = seed
        self._epoch = -1
        self._epoch_start = 0  # stream position of the current epoch's first window
        if self._windows_per_shard(phase=0).sum() == 0:
            raise TrainerError(f"the training shards hold no complete window of TRAIN_SEQ_LEN+1="
                               f"{seq_len + 1} tokens")
        self._begin_epoch(0)

    def _windows_per_shard(self, phase: int) -> np.ndarray:
        return np.maximum(self.counts - 1 - phase, 0) // self.seq_len

    def _begin_epoch(self, epoch: int) -> None:
        rng = np.random.default_rng([self.seed, epoch])
        phase = int(rng.integers(self.seq_len))
        per_shard = self._windows_per_shard(phase)
        if per_shard.sum() == 0:  # shards shorter than seq_len + phase: use no offset
            phase, per_shard = 0, self._windows_per_shard(0)
        if epoch > 0:
            self._epoch_start += len(self._order)
        self._epoch, self._phase = epoch, phase
        self._shard_ends = np.cumsum(per_shard)
        self._order = rng.permutation(int(self._shard_ends[-1]))

    def windows(self, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Shard indices and token offsets of stream positions [start, start + count)."""
        if start < self._epoch_start:
            raise ValueError("the stream is read forward only")
        shards, offsets = [], []
        while count > 0:
            local = start - self._epoch_start
            if local >= len(self._order):
                self._begin_epoch(self._epoch + 1)
                continue
            ids = self._order[local:local + count]
            shard = np.searchsorted(self._shard_ends, ids, side="right")
            first = np.concatenate(([0], self._shard_ends[:-1]))[shard]
            shards.append(shard)
            offsets.append(self._phase + (ids - first) * self.seq_len)
            start, count = start + len(ids), count - len(ids)
        return np.concatenate(shards), np.concatenate(offsets)


class TrainLoader:
    """`next_batch() -> (x, y, bounds)`: this rank's next micro-batch of int64 tokens on `device`,
    and with `segment_bounds` FlashAttention 4's segment bounds of x (trainer/fa4.py), else None."""

    def __init__(self, files: list[Path], seq_len: int, batch_seqs: int, dist: Dist, seed: int,
                 device: torch.device, prefetch: int = 2, segment_bounds: bool = False):
        self.shards = [open_shard(f) for f in files]
        self.stream = WindowStream([len(s) for s in self.shards], seq_len, seed)
        self.seq_len, self.batch_seqs, self.dist, self.device = seq_len, batch_seqs, dist, device
        self.segment_bounds = segment_bounds
        self.wait_ms = 0.0
        self._next = 0  # micro-batches handed out so far
        self._pinned = device.type == "cuda"
        # Buffers in flight: `prefetch` queued, one being filled, one being copied to the GPU.
        self._buffers = [self._new_buffer() for _ in range(prefetch + 2)] if prefetch else []
        self._copied = [None] * len(self._buffers)  # CUDA event: last copy out of each buffer done
        self._queue: queue.Queue = queue.Queue(maxsize=max(prefetch, 1))
        self._stop = threading.Event()
        self._thread = None
        if prefetch:
            self._thread = threading.Thread(target=self._produce, name="train-loader", daemon=True)
            self._thread.start()

    def _new_buffer(self) -> torch.Tensor:
        buf = torch.empty((self.batch_seqs, self.seq_len + 1), dtype=torch.int32)
        return buf.pin_memory() if self._pinned else buf

    def _fill(self, k: int, buf: torch.Tensor) -> torch.Tensor:
        """Micro-batch k of this rank: stream block k * world + rank."""
        block = k * self.dist.world_size + self.dist.rank
        shards, offsets = self.stream.windows(block * self.batch_seqs, self.batch_seqs)
        rows = buf.numpy()
        for row, (s, o) in enumerate(zip(shards.tolist(), offsets.tolist())):
            rows[row] = self.shards[s][o:o + self.seq_len + 1]
        return buf

    def _produce(self) -> None:
        k = 0
        try:
            while not self._stop.is_set():
                slot = k % len(self._buffers)
                if self._copied[slot] is not None:  # its last copy to the GPU must be done
                    self._copied[slot].synchronize()
                self._put((slot, self._fill(k, self._buffers[slot])))
                k += 1
        except BaseException as exc:  # handed to the training loop, which re-raises it
            self._put((None, exc))

    def _put(self, item: tuple) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                pass

    def next_batch(self, seq_len: int | None = None,
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """A `seq_len` shorter than the windows cuts each into windows of that length (the same
        tokens, each still followed by its target)."""
        if self._thread is None:  # synchronous: a plain buffer and a blocking copy
            slot = None
            host = self._fill(self._next, torch.empty((self.batch_seqs, self.seq_len + 1),
                                                      dtype=torch.int32))
        else:
            t0 = time.perf_counter()
            slot, host = self._queue.get()
            self.wait_ms += 1000 * (time.perf_counter() - t0)
            if slot is None:
                raise host
        self._next += 1
        seq_len = seq_len or self.seq_len
        bounds = None
        if self.segment_bounds:  # from the host copy, before the thread may refill it
            bounds = host_bounds(host[:, :-1].reshape(-1, seq_len), self.device)
        pinned = slot is not None and self._pinned
        batch = host.to(self.device, non_blocking=pinned)
        if pinned:
            self._copied[slot] = torch.cuda.Event()
            self._copied[slot].record()
        # .long() copies, so x and y never alias a host buffer the thread will refill.
        x, y = batch[:, :-1].long(), batch[:, 1:].long()
        if seq_len != self.seq_len:
            x, y = x.reshape(-1, seq_len), y.reshape(-1, seq_len)
        return x, y, bounds

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def host_bounds(windows: torch.Tensor, device: torch.device) -> torch.Tensor:
    """The segment bounds of the (B, T) host windows (trainer/fa4.py) on `device`. Computed on the
    GPU they cost a host sync per micro-batch, after which the GPU idled while the next forward's
    first small kernels were launched one by one (docs/benchmarks.md, "Segment bounds from the
    loader: no host sync in the step"). Their length is the data's, so compiled graphs take it as a dynamic
    size, compiled once for every count of documents."""
    bounds = bounds_of(windows)
    if device.type == "cuda":
        bounds = bounds.pin_memory().to(device, non_blocking=True)
    torch._dynamo.mark_dynamic(bounds, 0)
    return bounds


def load_validation_tokens(files: list[Path], seq_len: int) -> torch.Tensor:
    """All validation tokens in shard order as an int32 CPU tensor, cut to 1 + a multiple of
    `seq_len` (the records' `load_validation_tokens`), so every evaluation sees the same tokens."""
    tokens = np.concatenate([np.asarray(open_shard(f), dtype=np.int32) for f in files])
    usable = (tokens.size - 1) // seq_len * seq_len
    if usable <= 0:
        raise TrainerError(f"the validation split ({tokens.size} tokens) is shorter than one "
                           f"EVAL_SEQ_LEN={seq_len} window")
    return torch.from_numpy(tokens[:usable + 1].copy())


def load_validation_bytes(files: list[Path], n_tokens: int) -> torch.Tensor | None:
    """The byte sidecar of the validation shards (CaseOps data) as an int32 CPU tensor cut like
    `load_validation_tokens`'s `n_tokens`, or None when the shards have none; every file is checked
    against its shard (shards.read_sidecar), so a sidecar of other tokens stops the run."""
    counts = read_sidecar(files)
    return None if counts is None else torch.from_numpy(counts[:n_tokens].copy())
