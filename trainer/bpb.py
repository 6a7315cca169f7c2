"""Bytes per token, for scoring in bits per byte as the challenge does.

Three tables over token ids, built from the SentencePiece pieces (root train_gpt.py
`build_sentencepiece_luts`): the UTF-8 length of the piece without its leading `▁`, whether it
has that leading `▁`, and whether the id is a boundary (control, unknown or unused ids, and ids
past the tokenizer's vocabulary). Byte-fallback pieces `<0xNN>` are one byte. A target token
counts its base bytes plus one byte for its leading space unless the previous token is a
boundary (after BOS the space is not part of the text). Summed over a document this is the UTF-8
length of the normalized text.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import sentencepiece as spm
import torch

from trainer.errors import TrainerError
from trainer.extras import EXTRAS

SPACE = "\u2581"  # SentencePiece's visible space, `▁`


@dataclasses.dataclass(frozen=True)
class ByteTables:
    base_bytes: torch.Tensor         # int16 [V]: UTF-8 bytes of the piece without its `▁`
    has_leading_space: torch.Tensor  # bool [V]
    is_boundary: torch.Tensor        # bool [V]

    def to(self, device: torch.device | str) -> ByteTables:
        return ByteTables(*(t.to(device) for t in dataclasses.astuple(self)))


def load_tokenizer(path: str | Path, vocab_size: int) -> spm.SentencePieceProcessor:
    """The run's tokenizer, checked against VOCAB_SIZE and for a lone `▁` piece."""
    if not EXTRAS:  # `pgolf train` checked the tokenizer before launching
        return spm.SentencePieceProcessor(model_file=str(path))
    path = Path(path)
    if not path.is_file():
        raise TrainerError(f"tokenizer {path} does not exist (set TOKENIZER_PATH or DATA_DIR)")
    try:
        sp = spm.SentencePieceProcessor(model_file=str(path))
    except (OSError, RuntimeError) as exc:
        raise TrainerError(f"{path} is not a SentencePiece model: {exc}") from None
    if sp.vocab_size() != vocab_size:
        raise TrainerError(f"tokenizer {path} has {sp.vocab_size()} pieces but VOCAB_SIZE="
                           f"{vocab_size}")
    # Without a lone `▁` a space before a byte-fallback character falls back to the three UTF-8
    # bytes of `▁` and is counted as three bytes, not one (the SP8192 records assert the same).
    if sp.piece_to_id(SPACE) == sp.unk_id():
        raise TrainerError(f"tokenizer {path} has no lone '{SPACE}' piece, so bytes per token "
                           "would be miscounted")
    return sp


def build_byte_tables(sp: spm.SentencePieceProcessor, vocab_size: int) -> ByteTables:
    size = max(sp.vocab_size(), vocab_size)
    base = np.zeros(size, dtype=np.int16)
    space = np.zeros(size, dtype=np.bool_)
    boundary = np.ones(size, dtype=np.bool_)
    for i in range(sp.vocab_size()):
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            continue
        boundary[i] = False
        if sp.is_byte(i):
            base[i] = 1
            continue
        piece = sp.id_to_piece(i)
        if piece.startswith(SPACE):
            space[i] = True
            piece = piece[1:]
        base[i] = len(piece.encode("utf-8"))
    return ByteTables(torch.from_numpy(base), torch.from_numpy(space), torch.from_numpy(boundary))


def target_bytes(tables: ByteTables, prev_ids: torch.Tensor, target_ids: torch.Tensor) -> torch.Tensor:
    """Bytes each target token adds to the text, given the token before it (same shapes)."""
    leading = tables.has_leading_space[target_ids] & ~tables.is_boundary[prev_ids]
    return tables.base_bytes[target_ids].to(torch.int32) + leading.to(torch.int32)
