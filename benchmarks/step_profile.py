"""Where one training step of the record preset spends its time, on one GPU.

    python -m benchmarks.step_profile [--steps 6] [--out DIR] [--set NAME=VALUE ...]

Builds the record model exactly as `pgolf train` does (compiled, the chosen attention kernel,
Muon + AdamW, bf16 autocast, gradient accumulation 8 so the step is the 8-GPU global batch), feeds
it random tokens (no data pipeline: this isolates the GPU work), and for looping off and on:
  - times --steps steps after 3 compile/warmup steps (CUDA-synchronized wall clock, median);
  - splits one step into forward+backward of the 8 micro-batches and the optimizer step
    (clipping, Muon, AdamW, zeroing the gradients: one CUDA graph unless OPTIMIZER_GRAPH=0);
  - profiles one step and prints the CUDA kernels grouped by kind (pgolf's fused loss, XSA and
    q/k kernels, attention, matmul, fused Triton/inductor, copy/cast, other) with their share of the
    step, the step's time outside kernels (gaps), the top kernels by name, and writes every
    kernel of each graph to DIR/step_profile.json;
  - prints the dtype of the residual stream inside a block.
The numbers are what the speed work of the trainer is measured against (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import time
from pathlib import Path

import torch

from trainer.config import load_config
from trainer.data import host_bounds
from trainer.distributed import Dist
from trainer.evaluate import autocast
from trainer.model import build_model
from trainer.optim import build_optimizers

KINDS = (("softcapped CE (fused)", ("softcap_ce",)),
         ("exclusive self-attention (fused)", ("_xsa_",)),
         ("q/k norm and RoPE (fused)", ("_qk_",)),
         ("attention", ("cudnn", "flash", "fmha", "sdpa", "attn")),
         ("matmul", ("gemm", "cutlass", "sm90", "nvjet", "cublas")),
         ("fused (Triton, inductor)", ("triton",)),
         ("copy/cast", ("copy", "memcpy", "memset", "convert")))


def kind_of(name: str) -> str:
    lowered = name.lower()
    for kind, tags in KINDS:
        if any(tag in lowered for tag in tags):
            return kind
    return "other"


def make_batches(cfg, n: int, device: torch.device, segment_bounds: bool = False) -> list[tuple]:
    """n random micro-batches (x, y, bounds) as TrainLoader.next_batch gives them."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    seqs = cfg.train_batch_tokens // (8 * cfg.train_seq_len)
    out = []
    for _ in range(n):
        tokens = torch.randint(0, cfg.vocab_size, (seqs, cfg.train_seq_len + 1), generator=gen)
        bounds = host_bounds(tokens[:, :-1], device) if segment_bounds else None
        tokens = tokens.to(device)
        out.append((tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous(), bounds))
    return out


def timed_step(net, model, opts, batches, cfg, device) -> dict[str, float]:
    """One optimizer step; milliseconds of each phase (synchronized)."""
    times = {}
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for x, y, bounds in batches:
        with autocast(device):
            loss = net(x, y, bounds)
        (loss / len(batches)).backward()
    torch.cuda.synchronize(device)
    t1 = time.perf_counter()
    opts.step()  # clipping, every optimizer, zeroing the gradients
    torch.cuda.synchronize(device)
    t2 = time.perf_counter()
    times["forward+backward x8"] = 1000 * (t1 - t0)
    times["optimizer"] = 1000 * (t2 - t1)
    times["step"] = 1000 * (t2 - t0)
    return times


def residual_dtype(model, batches, device) -> str:
    seen = []
    hook = model.blocks[0].register_forward_hook(lambda m, i, o: seen.append(str(o.dtype)))
    with torch.no_grad(), autocast(device):
        x, y, _ = batches[0]
        model(x[:1, :64], y[:1, :64])
    hook.remove()
    return seen[0]


def profile_step(net, model, opts, batches, cfg, device) -> tuple[list[tuple[str, float, int]], float]:
    """The step's kernels (name, GPU ms, count), longest first, and the step's wall ms."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        times = timed_step(net, model, opts, batches, cfg, device)
    rows = []
    for event in prof.key_averages():
        cuda_us = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0)
        if cuda_us > 0 and event.key and not event.key.startswith("ProfilerStep"):
            rows.append((event.key, cuda_us / 1000.0, event.count))
    return sorted(rows, key=lambda r: -r[1]), times["step"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "runs/step_profile")))
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of the record preset to change, e.g. ATTN_BACKEND=fa4")
    args = ap.parse_args()
    device = torch.device("cuda")
    torch.set_float32_matmul_precision("high")
    cfg = load_config({"PRESET": "record"}, dict(kv.split("=", 1) for kv in args.set))
    model, attention = build_model(cfg, device)
    net = torch.compile(model, dynamic=False, fullgraph=True)
    opts = build_optimizers(cfg, model, Dist())
    batches = make_batches(cfg, 8, device, model.takes_segment_bounds)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(device)}, attention {attention}")
    print(f"residual stream dtype inside a block (eager, autocast): {residual_dtype(model, batches, device)}")
    report = {"attention": attention}
    for looping in (False, True):
        model.looping_active = looping
        label = "looping" if looping else "plain"
        t0 = time.perf_counter()
        for _ in range(3):
            timed_step(net, model, opts, batches, cfg, device)
        compile_s = time.perf_counter() - t0
        runs = [timed_step(net, model, opts, batches, cfg, device) for _ in range(args.steps)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        spread = max(r["step"] for r in runs) - min(r["step"] for r in runs)
        print(f"\n== {label}: compile+3 steps {compile_s:.0f}s; median of {args.steps} steps "
              f"(spread {spread:.1f} ms): " + ", ".join(f"{k} {v:.1f} ms" for k, v in med.items()))
        rows, step_ms = profile_step(net, model, opts, batches, cfg, device)
        by_kind = collections.Counter()
        for name, ms, _ in rows:
            by_kind[kind_of(name)] += ms
        total = sum(by_kind.values())
        print(f"GPU kernel time in one step: {total:.1f} ms; " + ", ".join(
            f"{k} {v:.1f} ms ({100 * v / total:.0f}%)" for k, v in by_kind.most_common()))
        # What the GPU did not run of that step: launches it waited for, syncs, the profiler's own.
        print(f"that step {step_ms:.1f} ms, minus its kernel time (gaps): {step_ms - total:.1f} ms")
        for name, ms, count in rows[:18]:
            print(f"  {ms:8.2f} ms  x{count:<5d} {kind_of(name):<17s} {name[:90]}")
        report[label] = {"median_ms": med, "kernel_ms_by_kind": dict(by_kind),
                         "profiled_step_ms": step_ms, "kernels": rows}
    peak = torch.cuda.max_memory_allocated(device) / 2**30
    print(f"\npeak memory allocated {peak:.1f} GiB")
    report["peak_gib"] = peak
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "step_profile.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
