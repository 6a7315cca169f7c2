"""A small stand-in for the bundled trainer: the shapes `pgolf package` has to carry.

It is never trained with; tests import it (plain and wrapped) and compare what it defines.
Docstrings, comments, f-strings with nested quotes, optional GPU imports and a third-party
compressor are here on purpose.
"""

from __future__ import annotations

import dataclasses
import math
import os

import brotli
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

try:  # FlashAttention 3 when present (H100), else PyTorch SDPA
    from flash_attn_interface import flash_attn_func
except ImportError:
    flash_attn_func = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Hyperparameters:
    """Every knob, read once from the environment (the challenge's names)."""

    seed: int = int(os.environ.get("SEED", 1337))
    vocab_size: int = int(os.environ.get("VOCAB_SIZE", 8192))
    num_layers: int = int(os.environ.get("NUM_LAYERS", 11))
    model_dim: int = int(os.environ.get("MODEL_DIM", 512))
    matrix_lr: float = float(os.environ.get("MATRIX_LR", 0.022))  # Muon on 2-D weights
    max_wallclock_seconds: float = float(os.environ.get("MAX_WALLCLOCK_SECONDS", 600.0))


class Block(nn.Module):
    """One pre-norm transformer block (attention omitted: only the shapes matter here)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim, bias=False)
        self.proj = nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # LeakyReLU squared (PR #549)
        return x + self.proj(F.leaky_relu(self.fc(F.rms_norm(x, (x.size(-1),))), 0.5).square())


def describe(h: Hyperparameters) -> str:
    """The one-line summary the log prints; the nested quotes are legal on Python 3.10."""
    names = [f.name for f in dataclasses.fields(h)]
    return f"hyperparameters: {', '.join(names)} (attention: {'fa3' if flash_attn_func else 'sdpa'})"


def bits_per_byte(loss_nats: float, tokens: int, n_bytes: int) -> float:
    return loss_nats / math.log(2) * tokens / n_bytes


def compress(blob: bytes) -> bytes:
    return brotli.compress(blob, quality=11)


def checksum(values) -> float:
    return float(np.asarray(values, dtype=np.float64).sum())


if __name__ == "__main__":
    print(describe(Hyperparameters()))
