"""The challenge's token shard format, read and written with strict checks.

A shard is a 1,024-byte header of 256 little-endian int32 (magic 20240520, version 1, token count,
then zeros) followed by that many little-endian uint16 token ids (data/download_hf_docs_and_
tokenize.py `write_datafile`; train_gpt.py `load_data_shard`). Datasets name them
`fineweb_{train,val}_NNNNNN.bin`; the glob skips CaseOps' `fineweb_val_bytes_*` sidecars.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trainer.errors import TrainerError
from trainer.extras import EXTRAS

SHARD_MAGIC = 20240520
SHARD_VERSION = 1
HEADER_INTS = 256
HEADER_BYTES = HEADER_INTS * 4
TOKEN_DTYPE = np.dtype("<u2")
BOS_ID = 1  # every document starts with it (the challenge's SentencePiece models' BOS)


def shard_paths(directory: str | Path, split: str) -> list[Path]:
    """The `split` ("train" or "val") shards of a dataset folder, in name order; never empty."""
    folder = Path(directory)
    if not folder.is_dir():
        raise TrainerError(f"data folder {folder} does not exist (set DATA_PATH or DATA_DIR, or "
                           "write shards with `pgolf data shards`)")
    paths = sorted(folder.glob(f"fineweb_{split}_[0-9]*.bin"))
    if not paths:
        raise TrainerError(f"no fineweb_{split}_*.bin shards in {folder}")
    return paths


def shard_token_count(path: str | Path) -> int:
    """Token count from the header, after checking magic, version and the exact file size."""
    if not EXTRAS:  # `pgolf train` checked every shard before launching
        return int(np.fromfile(path, dtype="<i4", count=3)[2])
    path = Path(path)
    try:
        size = path.stat().st_size
        header = np.fromfile(path, dtype="<i4", count=HEADER_INTS)
    except OSError as exc:
        raise TrainerError(f"cannot read shard {path}: {exc.strerror}") from None
    if header.size < HEADER_INTS:
        raise TrainerError(f"{path} is not a token shard: {size} bytes, shorter than the "
                           f"{HEADER_BYTES}-byte header")
    if int(header[0]) != SHARD_MAGIC or int(header[1]) != SHARD_VERSION:
        raise TrainerError(f"{path} is not a token shard: magic {int(header[0])} version "
                           f"{int(header[1])}, expected {SHARD_MAGIC} version {SHARD_VERSION}")
    count = int(header[2])
    expected = HEADER_BYTES + count * TOKEN_DTYPE.itemsize
    if count < 0 or size != expected:
        raise TrainerError(f"{path}: the header says {count} tokens ({expected} bytes) but the "
                           f"file has {size} bytes")
    return count


def open_shard(path: str | Path) -> np.memmap:
    """The shard's tokens as a read-only memory map (checked first)."""
    count = shard_token_count(path)
    return np.memmap(path, dtype=TOKEN_DTYPE, mode="r", offset=HEADER_BYTES, shape=(count,))


def write_shard(path: str | Path, tokens: np.ndarray) -> None:
    """Write `tokens` (any integer array with values in [0, 65536)) as one shard."""
    tokens = np.asarray(tokens)
    if tokens.size and (int(tokens.min()) < 0 or int(tokens.max()) >= 2**16):
        raise ValueError("token ids must fit in uint16")
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[:3] = (SHARD_MAGIC, SHARD_VERSION, tokens.size)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.astype(TOKEN_DTYPE, copy=False).tobytes())
