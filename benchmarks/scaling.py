"""How a training step of the record preset scales over the GPUs of one machine.

    python -m benchmarks.scaling --nproc 1 2 4 [--steps 6] [--out DIR]

For each process count N it launches `torchrun --standalone --nproc_per_node=N` on this module with
`--worker`. Every rank builds the model as `pgolf train` does (compiled, cuDNN attention, DDP,
Muon with its round-robin split over ranks, AdamW) and runs the trainer's own `train_step` on
random tokens with gradient accumulation 8 / N, so the global batch is the 8-GPU one (786,432
tokens) for every N: looping off, then on, 3 warmup steps each, then --steps synchronized steps
(the slowest rank's time, median). Prints ms/step per N and the scaling efficiency
T(1) / (N * T(N)), 1.0 being perfect; writes DIR/scaling.json. No data needed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import torch
from torch.nn.parallel import DistributedDataParallel

from benchmarks.step_profile import make_batches
from trainer import distributed
from trainer.config import load_config
from trainer.evaluate import autocast
from trainer.model import build_model
from trainer.optim import build_optimizers
from trainer.train import train_step

REPO = Path(__file__).resolve().parents[1]

RESULT = "scaling-result "  # the line rank 0 prints for the driver


def worker(steps: int) -> None:
    d = distributed.dist_from_env()
    device = torch.device("cuda", d.local_rank)
    torch.cuda.set_device(device)
    distributed.start(d, device)
    torch.set_float32_matmul_precision("high")
    cfg = load_config({"PRESET": "record"})
    model, _ = build_model(cfg, device)
    net = torch.compile(model, dynamic=False, fullgraph=True)
    if d.world_size > 1:
        net = DistributedDataParallel(net, device_ids=[device.index], broadcast_buffers=False)
    opts = build_optimizers(cfg, model, d)
    # train_step reads these fields of a Run and a loader's next_batch().
    run = types.SimpleNamespace(cfg=cfg, dist=d, device=device, autocast=lambda: autocast(device))
    # micro-batches of the 8-GPU size
    batches = itertools.cycle(make_batches(cfg, d.grad_accum_steps, device, model.takes_segment_bounds))
    loader = types.SimpleNamespace(next_batch=lambda seq_len: next(batches))
    result = {"nproc": d.world_size}
    for looping in (False, True):
        model.looping_active = looping
        for _ in range(3):
            train_step(run, net, loader, opts, cfg.train_seq_len)
        times = []
        for _ in range(steps):
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            train_step(run, net, loader, opts, cfg.train_seq_len)
            torch.cuda.synchronize(device)
            elapsed = torch.tensor(1000 * (time.perf_counter() - t0), dtype=torch.float64, device=device)
            times.append(distributed.all_reduce(elapsed, "max").item())
        result["looping_ms" if looping else "plain_ms"] = statistics.median(times)
    if d.is_main:
        print(RESULT + json.dumps(result), flush=True)
    distributed.stop(finished=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nproc", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "runs/scaling")))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.steps)
        return
    available = torch.cuda.device_count()
    if max(args.nproc) > available:
        sys.exit(f"error: --nproc {max(args.nproc)} needs that many GPUs; this machine has {available}")
    results = []
    for n in args.nproc:
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                               f"--nproc_per_node={n}", "-m", "benchmarks.scaling",
                               "--worker", "--steps", str(args.steps)],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
        if done.returncode != 0 or not lines:
            sys.exit(f"error: the run on {n} GPUs failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        results.append(json.loads(lines[0][len(RESULT):]))
        print(f"{n} GPU(s): {results[-1]['plain_ms']:.1f} ms/step looping off, "
              f"{results[-1]['looping_ms']:.1f} on", flush=True)
    base = next((r for r in results if r["nproc"] == 1), None)
    if base is not None:
        for r in results:
            r["efficiency"] = {key: base[key] / (r["nproc"] * r[key]) for key in ("plain_ms", "looping_ms")}
        print("\n| GPUs | ms/step, looping off | efficiency | ms/step, looping on | efficiency |")
        print("|---|---|---|---|---|")
        for r in results:
            e = r["efficiency"]
            print(f"| {r['nproc']} | {r['plain_ms']:.1f} | {e['plain_ms']:.3f} | "
                  f"{r['looping_ms']:.1f} | {e['looping_ms']:.3f} |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(json.dumps({"device": torch.cuda.get_device_name(0),
                                                       "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
