"""Checks of a run's input that need no GPU: batch arithmetic, shards, tokenizer, compressor.

`pgolf train` runs them before it launches anything, and every rank runs them again at start, so
bad input ends the run with one line before the first CUDA call.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from trainer.bpb import load_tokenizer
from trainer.compress import CompressorUnavailable, require_compressor
from trainer.config import Config
from trainer.distributed import REFERENCE_WORLD_SIZE
from trainer.errors import TrainerError
from trainer.shards import shard_paths, shard_token_count


@dataclasses.dataclass(frozen=True)
class DataFiles:
    train: list[Path]
    val: list[Path]
    tokenizer: Path
    train_tokens: int
    val_tokens: int


def check_batches(cfg: Config) -> None:
    """The global batches split into whole sequences on every rank and accumulation step."""
    # world size x accumulation steps is always 8, so the split does not depend on the world.
    micro = REFERENCE_WORLD_SIZE * cfg.train_seq_len
    if cfg.train_batch_tokens % micro:
        raise TrainerError(f"TRAIN_BATCH_TOKENS={cfg.train_batch_tokens} must be a multiple of "
                           f"{REFERENCE_WORLD_SIZE} micro-batches x TRAIN_SEQ_LEN={cfg.train_seq_len}"
                           f" = {micro}")
    if cfg.val_batch_tokens < REFERENCE_WORLD_SIZE * cfg.eval_seq_len:
        raise TrainerError(f"VAL_BATCH_TOKENS={cfg.val_batch_tokens} must hold at least one "
                           f"EVAL_SEQ_LEN={cfg.eval_seq_len} window per rank and accumulation step")


def find_data(cfg: Config) -> DataFiles:
    """The shards (headers and sizes checked) and the tokenizer (checked against VOCAB_SIZE)."""
    train = shard_paths(cfg.data_path, "train")
    val = shard_paths(cfg.data_path, "val")
    train_tokens = sum(shard_token_count(p) for p in train)
    val_tokens = sum(shard_token_count(p) for p in val)
    if val_tokens <= cfg.eval_seq_len:
        raise TrainerError(f"the validation split ({val_tokens} tokens) is shorter than one "
                           f"EVAL_SEQ_LEN={cfg.eval_seq_len} window")
    load_tokenizer(cfg.tokenizer_path, cfg.vocab_size)
    return DataFiles(train=train, val=val, tokenizer=Path(cfg.tokenizer_path),
                     train_tokens=train_tokens, val_tokens=val_tokens)


def check_compressor(cfg: Config) -> None:
    """A run that will export needs its compressor before it trains, not after."""
    if not cfg.prequant_only:
        try:
            require_compressor(cfg.compressor)
        except CompressorUnavailable as exc:
            raise TrainerError(str(exc)) from None


def preflight(cfg: Config) -> DataFiles:
    check_batches(cfg)
    check_compressor(cfg)
    return find_data(cfg)
