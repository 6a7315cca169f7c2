"""Entry point of a run: `python -m trainer`, `torchrun -m trainer`, or the bundled train_gpt.py.

Settings come from the environment (see trainer.config). The order: check the input without the
GPU, join the process group, log the header, load validation data, build the model, train,
evaluate the EMA weights, save them, then export and evaluate the artifact when trainer.export is
part of this build.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import numpy as np
import torch

from trainer.config import Config, load_config
from trainer.distributed import Dist, dist_from_env, start, stop
from trainer.errors import TrainerError
from trainer.evaluate import load_validation
from trainer.extras import EXTRAS
from trainer.model import build_model
from trainer.preflight import DataFiles, find_data, preflight
from trainer.progress import start_progress
from trainer.runlog import close_log, log, log_run_header, open_log
from trainer.runtime import Run
from trainer.train import train

try:
    from trainer.export import check_cap_before_training, export_and_evaluate
except ModuleNotFoundError as exc:  # the export half is built separately; without it runs end here
    if exc.name != "trainer.export":
        raise
    check_cap_before_training = export_and_evaluate = None

# The file that is running, when it is a bundled train_gpt.py (then it is not inside a package).
CODE_PATH = None if __package__ else Path(__file__).resolve()


def main() -> None:
    try:
        cfg = load_config()
        dist = dist_from_env()
        # `pgolf train` ran the whole preflight before launching; a record run only finds its data.
        data = preflight(cfg) if EXTRAS else find_data(cfg)
    except TrainerError as exc:
        fail(exc)
    device = pick_device(dist)
    start(dist, device)
    finished = False
    try:
        run_training(cfg, dist, device, data)
        finished = True
    except TrainerError as exc:
        fail(exc)
    except KeyboardInterrupt:  # Ctrl-C: the log says the run was stopped, the shell sees 130
        log("stopped: interrupted (Ctrl-C); the run is incomplete")
        sys.exit(130)
    finally:
        close_log()
        stop(finished)


def fail(exc: TrainerError) -> None:
    """Report bad input in one line (once, from rank 0) and exit with status 2."""
    if os.environ.get("RANK", "0") == "0":
        print(f"train_gpt: {exc}", file=sys.stderr, flush=True)
    sys.exit(2)


def pick_device(dist: Dist) -> torch.device:
    if not torch.cuda.is_available():
        return torch.device("cpu")
    device = torch.device("cuda", dist.local_rank)
    torch.cuda.set_device(device)
    # fp32 matmuls outside autocast may use TF32, as in the records.
    torch.set_float32_matmul_precision("high")
    return device


def set_cpu_threads() -> str:
    """One torch thread per process on CPU unless OMP_NUM_THREADS says otherwise; returns the log
    line. torch's default, a thread per core, made a tiny step of the demo 5 to 30 times slower
    on a shared two-core machine (threads waiting on each other while another process holds a
    core), and the models that train on a CPU are too small to gain from more."""
    if os.environ.get("OMP_NUM_THREADS"):
        return f"cpu_threads:{torch.get_num_threads()} (OMP_NUM_THREADS)"
    torch.set_num_threads(1)
    return (f"cpu_threads:1 (one per process on {os.cpu_count()} cores; OMP_NUM_THREADS=N "
            "for more)")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run_training(cfg: Config, dist: Dist, device: torch.device, data: DataFiles) -> None:
    out_dir = Path(cfg.out_dir)
    open_log(out_dir / "train.log", dist.is_main)
    live = start_progress(dist.is_main) if EXTRAS else None
    try:
        log_run_header(cfg, dist.world_size, CODE_PATH)
        log(f"world_size:{dist.world_size} grad_accum_steps:{dist.grad_accum_steps}")
        log(f"seed:{cfg.seed}")
        # CPU runs are never records: pgolf train writes the record bundle only with GPUs.
        if EXTRAS and device.type == "cpu":
            log(set_cpu_threads())
        seed_everything(cfg.seed)
        val = load_validation(cfg, data.val, data.tokenizer, device)
        log(f"train_shards: {len(data.train)}")
        log(f"train_tokens: {data.train_tokens}")
        log(f"val_tokens: {val.num_targets}")
        model, attention = build_model(cfg, device)
        log(f"attention:{attention}")
        log(f"model_params:{sum(p.numel() for p in model.parameters())}")
        run = Run(cfg=cfg, dist=dist, device=device, data=data, val=val, out_dir=out_dir,
                  code_path=CODE_PATH)
        if check_cap_before_training is not None and not cfg.prequant_only:
            check_cap_before_training(cfg, model, CODE_PATH)
        train_ms = train(run, model, live)
        if dist.is_main:  # CPU tensors, so the checkpoint loads anywhere
            torch.save({k: v.cpu() for k, v in model.state_dict().items()}, out_dir / "final_model.pt")
            log(f"checkpoint: final_model.pt {(out_dir / 'final_model.pt').stat().st_size} bytes")
    finally:
        if EXTRAS and live is not None:
            live.stop()
    if export_and_evaluate is not None and not cfg.prequant_only:
        export_and_evaluate(run, model, train_ms)


if __name__ == "__main__":
    main()
