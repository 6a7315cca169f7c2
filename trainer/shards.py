"""The challenge's token shard format, read and written with strict checks.

A shard is a 1,024-byte header of 256 little-endian int32 (magic 20240520, version 1, token count,
then zeros) followed by that many little-endian uint16 token ids (data/download_hf_docs_and_
tokenize.py `write_datafile`; train_gpt.py `load_data_shard`). Datasets name them
`fineweb_{train,val}_NNNNNN.bin`; the glob skips CaseOps' `fineweb_val_bytes_*` sidecars.

The byte sidecar of CaseOps data (trainer/caseops.py) is one file per validation shard,
`fineweb_val_bytes_NNNNNN.bin` beside `fineweb_val_NNNNNN.bin`, in the same format and of the same
length: for each token, the UTF-8 bytes of the original text it stands for (0 for BOS).
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


def sidecar_name(val_name: str) -> str:
    """fineweb_val_NNNNNN.bin -> fineweb_val_bytes_NNNNNN.bin"""
    return val_name.replace("fineweb_val_", "fineweb_val_bytes_", 1)


def sidecar_paths(val_paths: list[Path]) -> list[Path] | None:
    """The byte sidecar of these validation shards, or None when their folder has none."""
    folder = val_paths[0].parent
    found = sorted(folder.glob("fineweb_val_bytes_[0-9]*.bin"))
    expected = [p.with_name(sidecar_name(p.name)) for p in val_paths]
    if found and found != expected:
        raise TrainerError(f"{folder}: the byte sidecar ({', '.join(p.name for p in found)}) does "
                           f"not match the validation shards ({', '.join(p.name for p in val_paths)})")
    return found or None


def read_sidecar(val_paths: list[Path]) -> np.ndarray | None:
    """The bytes of every validation token (int32, in shard order) from the byte sidecar, or None
    when there is none; checked to have one count per token and 0 at every BOS."""
    paths = sidecar_paths(val_paths)
    if paths is None:
        return None
    counts = []
    for val, path in zip(val_paths, paths):
        tokens, nbytes = open_shard(val), open_shard(path)
        if nbytes.size != tokens.size:
            raise TrainerError(f"{path}: {nbytes.size} byte counts for the {tokens.size} tokens of "
                               f"{val.name}")
        if np.any(nbytes[tokens == BOS_ID]):
            raise TrainerError(f"{path}: a BOS token of {val.name} has bytes; the sidecar does not "
                               "belong to these tokens")
        counts.append(np.asarray(nbytes, dtype=np.int32))
    return np.concatenate(counts)
