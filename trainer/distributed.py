"""Rank, world size and the few collectives the trainer uses (NCCL on GPUs, gloo on CPU), and
the wait for the GPU's queued work that every clock reading needs.

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK; without them the run is one process. Every helper
is a no-op when no process group is running, so single-process code needs no branches.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

import torch
import torch.distributed as dist

from trainer.errors import TrainerError

# The challenge's global batch is defined for 8 GPUs: a smaller world accumulates 8 / WORLD_SIZE
# micro-batches per step so the optimizer sees the same batch (root train_gpt.py).
REFERENCE_WORLD_SIZE = 8


@dataclasses.dataclass(frozen=True)
class Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def grad_accum_steps(self) -> int:
        return REFERENCE_WORLD_SIZE // self.world_size


def dist_from_env(env: Mapping[str, str] | None = None) -> Dist:
    """The process's place in the run, from torchrun's variables; checks WORLD_SIZE divides 8."""
    env = os.environ if env is None else env
    try:
        world = int(env.get("WORLD_SIZE", "1"))
        rank, local_rank = int(env.get("RANK", "0")), int(env.get("LOCAL_RANK", "0"))
    except ValueError:
        raise TrainerError("RANK, WORLD_SIZE and LOCAL_RANK must be integers") from None
    if world < 1 or REFERENCE_WORLD_SIZE % world:
        raise TrainerError(f"WORLD_SIZE={world} must divide {REFERENCE_WORLD_SIZE} so the global "
                           "batch stays the same (use 1, 2, 4 or 8 processes)")
    return Dist(rank=rank, world_size=world, local_rank=local_rank)


def start(d: Dist, device: torch.device) -> None:
    """Join the process group when there is more than one process."""
    if d.world_size == 1:
        return
    if device.type == "cuda":
        dist.init_process_group("nccl", device_id=device)
    else:
        dist.init_process_group("gloo")


def stop(finished: bool = False) -> None:
    """Leave the process group. After a finished run every rank meets at a barrier first, so
    none tears its connections down while another is still talking to it (a rank that did
    could abort at exit after a good run). After an error there is no barrier: a crashed rank
    would never arrive."""
    if dist.is_available() and dist.is_initialized():
        if finished:
            dist.barrier()
        dist.destroy_process_group()


def is_running() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of the running group; (0, 1) without one."""
    return (dist.get_rank(), dist.get_world_size()) if is_running() else (0, 1)


def synchronize(device: torch.device) -> None:
    """Wait until the GPU has finished its queued work (a no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def all_reduce(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """In-place sum or max over ranks; returns the tensor."""
    if is_running():
        dist.all_reduce(tensor, op={"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX}[op])
    return tensor


def broadcast(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    if is_running():
        dist.broadcast(tensor, src)
    return tensor


def broadcast_object(value, src: int = 0):
    """`src`'s picklable value on every rank (also a barrier)."""
    if is_running():
        box = [value]
        dist.broadcast_object_list(box, src=src)
        return box[0]
    return value
