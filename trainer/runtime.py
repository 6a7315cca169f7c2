"""`Run`: what every phase of a run (training, export, evaluation) is handed."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import torch

from trainer.config import Config
from trainer.data import TrainLoader
from trainer.distributed import Dist
from trainer.evaluate import ValidationSet, autocast
from trainer.preflight import DataFiles


@dataclasses.dataclass(frozen=True)
class Run:
    cfg: Config
    dist: Dist
    device: torch.device
    data: DataFiles
    val: ValidationSet
    out_dir: Path              # rank 0 writes here: train.log, final_model.pt, the artifact
    code_path: Path | None     # the running train_gpt.py; None when running the package

    @property
    def batch_seqs(self) -> int:
        """Sequences per micro-batch on this rank."""
        micro_batches = self.dist.world_size * self.dist.grad_accum_steps
        return self.cfg.train_batch_tokens // (micro_batches * self.cfg.train_seq_len)

    def train_loader(self, seed: int | None = None, segment_bounds: bool = False) -> TrainLoader:
        """A fresh loader over the training shards, from the start of the seeded order;
        `segment_bounds`: each batch with FA4's segment bounds (GPT.takes_segment_bounds)."""
        return TrainLoader(self.data.train, self.cfg.train_seq_len, self.batch_seqs, self.dist,
                           self.cfg.seed if seed is None else seed, self.device,
                           self.cfg.loader_prefetch, segment_bounds)

    def autocast(self) -> contextlib.AbstractContextManager:
        return autocast(self.device)
