"""The standard validation: mean loss and bits per byte over non-overlapping windows.

As the records' `eval_val`: the validation tokens are cut into EVAL_SEQ_LEN windows, split evenly
over ranks, run VAL_BATCH_TOKENS / (world * accumulation) tokens at a time, and every target is
scored. BOS targets count in the loss and add no bytes. Sums are fp64 and all-reduced, then
bpb = (loss / ln 2) * tokens / bytes.

Bytes per target come from the tokenizer's pieces (bpb.py), or, when the validation shards have
a byte sidecar (CaseOps data, trainer/caseops.py), from the sidecar by position: there the pieces
hold case operators that stand for no bytes of the original text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from pathlib import Path

import torch
import torch.nn as nn

from trainer.bpb import ByteTables, build_byte_tables, load_tokenizer, target_bytes
from trainer.caseops import is_caseops
from trainer.config import Config
from trainer.data import load_validation_bytes, load_validation_tokens
from trainer.distributed import Dist, all_reduce
from trainer.errors import TrainerError


@dataclasses.dataclass(frozen=True)
class ValidationSet:
    tokens: torch.Tensor  # int32, CPU: all validation tokens in order (data.load_validation_tokens)
    tables: ByteTables    # on the run's device
    sidecar: torch.Tensor | None = None  # int32 on the run's device: bytes of each token, or None

    @property
    def num_targets(self) -> int:
        return self.tokens.numel() - 1

    def bytes_of(self, prev_ids: torch.Tensor, target_ids: torch.Tensor,
                 target_pos: torch.Tensor) -> torch.Tensor:
        """Bytes of each target (sliding.TargetBytes)."""
        if self.sidecar is not None:
            return self.sidecar[target_pos]
        return target_bytes(self.tables, prev_ids, target_ids)


def load_validation(cfg: Config, val_files: list[Path], tokenizer: Path,
                    device: torch.device) -> ValidationSet:
    """Every validation token in order, with the byte tables of the run's tokenizer and the byte
    sidecar, if the shards have one, on `device`."""
    sp = load_tokenizer(tokenizer, cfg.vocab_size)
    tables = build_byte_tables(sp, cfg.vocab_size)
    tokens = load_validation_tokens(val_files, cfg.eval_seq_len)
    sidecar = load_validation_bytes(val_files, tokens.numel())
    if sidecar is None and is_caseops(sp):
        raise TrainerError(f"{tokenizer} is a CaseOps tokenizer, but the validation shards have no "
                           "byte sidecar (fineweb_val_bytes_*.bin): its pieces would count the case "
                           "operators as bytes (write the shards with `pgolf data shards --caseops`)")
    return ValidationSet(tokens, tables.to(device), None if sidecar is None else sidecar.to(device))


def autocast(device: torch.device) -> contextlib.AbstractContextManager:
    """bf16 autocast on GPUs; CPU runs stay in fp32."""
    return torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")


@torch.inference_mode()
def evaluate(model: nn.Module, val: ValidationSet, cfg: Config, dist: Dist,
             device: torch.device) -> tuple[float, float]:
    """(val_loss in nats per token, val_bpb) of `model(x, y) -> mean loss` on the validation set."""
    seq_len = cfg.eval_seq_len
    batch_seqs = max(cfg.val_batch_tokens // (dist.world_size * dist.grad_accum_steps) // seq_len, 1)
    total_seqs = val.num_targets // seq_len
    first, last = total_seqs * dist.rank // dist.world_size, total_seqs * (dist.rank + 1) // dist.world_size
    sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss, tokens, bytes
    was_training = model.training
    model.eval()
    for start in range(first, last, batch_seqs):
        end = min(start + batch_seqs, last)
        chunk = val.tokens[start * seq_len : end * seq_len + 1].to(device, non_blocking=True).long()
        x, y = chunk[:-1].view(-1, seq_len), chunk[1:].view(-1, seq_len)
        target_pos = torch.arange(start * seq_len + 1, end * seq_len + 1, device=device).view_as(y)
        with autocast(device):
            loss = model(x, y)
        sums[0] += loss.double() * y.numel()
        sums[1] += y.numel()
        sums[2] += val.bytes_of(x, y, target_pos).sum().double()
    model.train(was_training)
    loss_sum, tokens, byte_count = all_reduce(sums).tolist()
    val_loss = loss_sum / tokens
    return val_loss, val_loss / math.log(2.0) * tokens / byte_count
