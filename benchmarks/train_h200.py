"""Throughput and quality of the record preset on one GPU, against the reference figures.

    python -m benchmarks.train_h200                     # from the repository root, one command

Needs the stand-in corpus in .gpu/corpus/ (docs.jsonl.xz and stand_in_8192_bpe.model), torch,
numpy and sentencepiece; nothing else (no pgolf install, no network). It
  1. tokenizes the corpus into SP8192 shards (first 1,030 documents = validation, as the corpus'
     own make_shards.py), on every core;
  2. times host-side batch assembly (what a synchronous loader would add to every step) and the
     GPU's bf16 matmul rate (the MFU denominator);
  3. trains the record preset (gradient accumulation 8 on one GPU, so the global batch is the
     8-GPU one) for MAX_WALLCLOCK_SECONDS=180 with the 12 s GPTQ reserve, then evaluates the EMA
     weights (PREQUANT_ONLY=1: no export);
  4. prints ms/step before and after recurrence, tokens/s, MFU, peak memory and val_bpb beside
     the record script's figures on the same GPU kind and data (the reference notes'
     anchors.md, outside this repository).
Logs and a summary.json go to $OUT (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

from trainer.config import load_config
from trainer.data import TrainLoader
from trainer.dataprep import iter_documents, write_shards
from trainer.distributed import Dist
from trainer.flops import step_flops
from trainer.shards import shard_paths

REPO = Path(__file__).resolve().parents[1]

VAL_DOCS = 1030  # the stand-in corpus' validation split: its first 5% of documents
# The record script (2026-04-09) on one H200 with this corpus, 180 s cap (the reference notes'
# anchors.md, outside this repository).
REFERENCE = {
    "record script, cuDNN SDPA, EMA 0.95": {
        "steps": "179 in 168.4 s", "ms_before": "~690", "ms_after": "~1,140", "ms_avg": "941",
        "tok_s_before": "1.14 M", "tok_s_after": "0.69 M", "peak": "40.4 GB",
        "bpb_live": "1.1478", "bpb_ema": "1.1599"},
    "record script, flash SDPA, EMA 0.9965": {
        "steps": "161 in 168.5 s", "ms_before": "~800", "ms_after": "~1,230", "ms_avg": "1,047",
        "tok_s_before": "0.98 M", "tok_s_after": "0.64 M", "peak": "42.8 GB",
        "bpb_live": "1.1994", "bpb_ema": "n/a (EMA 0.9965 over 161 steps)"},
}


def prepare_data(corpus: Path, data_dir: Path) -> dict:
    dataset = data_dir / "datasets" / "fineweb10B_sp8192"
    t0 = time.perf_counter()
    summary = write_shards(iter_documents([corpus / "docs.jsonl.xz"]), corpus / "stand_in_8192_bpe.model",
                           dataset, VAL_DOCS, workers=os.cpu_count())
    (data_dir / "tokenizers").mkdir(parents=True, exist_ok=True)
    shutil.copy(corpus / "stand_in_8192_bpe.model", data_dir / "tokenizers" / "fineweb_8192_bpe.model")
    print(f"shards: val {summary['val'].tokens:,} tokens, train {summary['train'].tokens:,} tokens "
          f"in {time.perf_counter() - t0:.1f}s", flush=True)
    return {split: s.tokens for split, s in summary.items()}


def host_batch_ms(data_dir: Path) -> float:
    """Milliseconds to assemble one 48 x 2049 micro-batch from the memory map on the host."""
    files = shard_paths(data_dir / "datasets" / "fineweb10B_sp8192", "train")
    loader = TrainLoader(files, 2048, 48, Dist(), seed=0, device=torch.device("cpu"), prefetch=0)
    loader.next_batch()
    t0 = time.perf_counter()
    for _ in range(32):
        loader.next_batch()
    return 1000 * (time.perf_counter() - t0) / 32


def matmul_tflops() -> float:
    """Measured dense bf16 matmul rate of this GPU (8192^3), TFLOP/s."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 50
    for _ in range(n):
        a @ b
    torch.cuda.synchronize()
    return 2 * 8192**3 * n / (time.perf_counter() - t0) / 1e12


def train(data_dir: Path, out: Path, seconds: float, warmup_steps: int) -> Path:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PRESET": "record", "DATA_DIR": str(data_dir),
           "MAX_WALLCLOCK_SECONDS": str(seconds), "PREQUANT_ONLY": "1", "VAL_LOSS_EVERY": "0",
           "TRAIN_LOG_EVERY": "1", "WARMUP_STEPS": str(warmup_steps), "OUT_DIR": str(out),
           "RUN_ID": "bench_h200"}
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.log").unlink(missing_ok=True)  # the trainer appends: a rerun must not read the last run
    with open(out / "stdout.txt", "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "trainer"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            sink.write(line)
            if not line.startswith(("  ", "step:")) or "val_" in line or line.startswith("step:1/"):
                print(line, end="", flush=True)
        if proc.wait() != 0:
            raise SystemExit(f"training failed with exit status {proc.returncode}; see {out}")
    return out / "train.log"


def summarize(log_text: str, tflops: float, host_ms: float) -> dict:
    steps = [(int(m[1]), float(m[2])) for m in re.finditer(r"^step:(\d+)/\d+ train_loss:\S+ "
                                                           r"train_time:(\S+)ms", log_text, re.M)]
    loop = re.search(r"^layer_loop:enabled step:(\d+)", log_text, re.M)
    switch = int(loop[1]) if loop else steps[-1][0]
    times = dict(steps)

    def ms_per_step(first: int, last: int) -> float:
        return (times[last] - times[first]) / (last - first)

    cfg = load_config({"PRESET": "record"})
    last = steps[-1][0]
    before = ms_per_step(1, switch)                       # steps 2..switch run without the loops
    after = ms_per_step(switch + 1, last) if last > switch + 1 else float("nan")
    avg = times[last] / last
    flops_plain, flops_loop = step_flops(cfg, False), step_flops(cfg, True)
    total_flops = switch * flops_plain + (last - switch) * flops_loop

    def grab(pattern: str) -> str | None:
        found = re.search(pattern, log_text, re.M)
        return found[1] if found else None

    return {
        "steps": last, "train_time_ms": times[last], "loop_on_at_step": switch,
        "ms_per_step_before_loop": before, "ms_per_step_after_loop": after, "ms_per_step_avg": avg,
        "tokens_per_s_before": cfg.train_batch_tokens / before * 1000,
        "tokens_per_s_after": cfg.train_batch_tokens / after * 1000,
        "step_flops_plain": flops_plain, "step_flops_looping": flops_loop,
        "measured_bf16_tflops": tflops,
        "mfu_before": flops_plain / (before / 1000) / (tflops * 1e12),
        "mfu_after": flops_loop / (after / 1000) / (tflops * 1e12),
        "mfu_avg": total_flops / (times[last] / 1000) / (tflops * 1e12),
        "peak_allocated_mib": int(grab(r"^peak memory allocated: (\d+) MiB") or 0),
        "val_bpb_live": float(grab(r"^step:\d+/\d+ val_loss:\S+ val_bpb:(\S+)") or "nan"),
        "val_bpb_post_ema": float(grab(r"^pre-quantization post-ema val_loss:\S+ val_bpb:(\S+)") or "nan"),
        "ema": grab(r"^ema:decay (.*)$"), "attention": grab(r"^attention:(.*)$"),
        "mlp_kernel": grab(r"^mlp_kernel:(.*)$"),
        "loader": grab(r"^loader: (.*)$"), "host_batch_ms": host_ms,
    }


def table(s: dict) -> str:
    ours = {
        "steps": f"{s['steps']} in {s['train_time_ms'] / 1000:.1f} s",
        "ms_before": f"{s['ms_per_step_before_loop']:.0f}", "ms_after": f"{s['ms_per_step_after_loop']:.0f}",
        "ms_avg": f"{s['ms_per_step_avg']:.0f}",
        "tok_s_before": f"{s['tokens_per_s_before'] / 1e6:.2f} M",
        "tok_s_after": f"{s['tokens_per_s_after'] / 1e6:.2f} M",
        "peak": f"{s['peak_allocated_mib'] * 2**20 / 1e9:.1f} GB ({s['peak_allocated_mib']:,} MiB)",
        "bpb_live": f"{s['val_bpb_live']:.4f}", "bpb_ema": f"{s['val_bpb_post_ema']:.4f}",
    }
    rows = [("steps in the training time", "steps"), ("ms/step before recurrence", "ms_before"),
            ("ms/step after recurrence", "ms_after"), ("ms/step average", "ms_avg"),
            ("tokens/s before recurrence", "tok_s_before"), ("tokens/s after recurrence", "tok_s_after"),
            ("peak memory allocated", "peak"), ("val_bpb, live weights at the stop", "bpb_live"),
            ("val_bpb, EMA weights, pre-quantization", "bpb_ema")]
    columns = [("pgolf trainer (this run)", ours)] + list(REFERENCE.items())
    lines = ["| | " + " | ".join(name for name, _ in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {label} | " + " | ".join(col[key] for _, col in columns) + " |" for label, key in rows]
    mfu = (f"MFU (of the measured {s['measured_bf16_tflops']:.0f} TFLOP/s bf16 matmul rate; "
           f"{s['step_flops_plain']:.3g} / {s['step_flops_looping']:.3g} FLOPs per step without / "
           f"with the loops): {100 * s['mfu_before']:.1f}% before recurrence, "
           f"{100 * s['mfu_after']:.1f}% after, {100 * s['mfu_avg']:.1f}% average")
    notes = [mfu, f"attention: {s['attention']}", f"mlp kernel: {s['mlp_kernel']}", f"ema: {s['ema']}",
             f"loader: {s['loader']}; "
             f"host batch assembly {s['host_batch_ms']:.1f} ms per micro-batch, "
             f"{8 * s['host_batch_ms']:.0f} ms per step if it were not prefetched"]
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=REPO / ".gpu" / "corpus")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", REPO / "runs" / "bench_h200")))
    ap.add_argument("--work", type=Path, default=Path("/tmp/pgolf_bench"), help="Shards go here.")
    ap.add_argument("--seconds", type=float, default=180.0)
    ap.add_argument("--warmup-steps", type=int, default=10,
                    help="Compile steps per graph (untimed; the record uses 20).")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a CUDA GPU")
    for name in ("docs.jsonl.xz", "stand_in_8192_bpe.model"):
        if not (args.corpus / name).is_file():
            raise SystemExit(f"{args.corpus / name} is missing: copy the stand-in corpus there")
    args.out.mkdir(parents=True, exist_ok=True)
    data_dir = args.work / "data"
    tokens = prepare_data(args.corpus, data_dir)
    host_ms = host_batch_ms(data_dir)
    tflops = matmul_tflops()
    print(f"host batch assembly {host_ms:.2f} ms; bf16 matmul {tflops:.0f} TFLOP/s", flush=True)
    log = train(data_dir, args.out / "run", args.seconds, args.warmup_steps)
    summary = {**summarize(log.read_text(), tflops, host_ms), "shard_tokens": tokens,
               "device": torch.cuda.get_device_name(), "torch": torch.__version__}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    text = table(summary)
    (args.out / "summary.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
