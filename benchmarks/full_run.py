"""The challenge's whole run on several GPUs: a bundled train_gpt.py under torchrun, end to end.

    python -m benchmarks.full_run --bundle BUNDLE --nproc 4 start                # data, launch
    python -m benchmarks.full_run wait                                           # follow, collect

BUNDLE is the single-file train_gpt.py that `pgolf train` writes into a run folder (the file a
submission ships), built where pgolf is installed and copied next to the corpus. It
  1. tokenizes the stand-in corpus into SP8192 shards as benchmarks/train_h200.py does;
  2. launches `torchrun --standalone --nproc_per_node=N BUNDLE` with the record preset's defaults:
     600 s training cap with the GPTQ reserve inside it, GPTQ, brotli, the artifact, then the
     quantized, sliding-window and score-first TTT evaluations; on fewer than 8 GPUs the trainer
     raises gradient accumulation so the global batch stays 786,432 tokens;
  3. `wait` follows the log until the run ends (or --wait seconds pass: run it again), then copies
     train.log, the artifact and the run's stdout to $OUT (or --out) with summary.json and
     summary.md: steps, ms/step, tokens/s per GPU, peak memory, train and eval times per phase,
     artifact bytes and val_bpb at each stage.
`summarize --log LOG --tflops RATE` prints the summary of a kept log again, with MFU against
RATE. The launch is detached (its own process session) because training plus evaluation outlasts one
10-minute command on the GPU machine: `start` returns once training is under way.
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

from benchmarks import train_h200  # the shared data preparation and matmul rate
from trainer.config import load_config
from trainer.flops import step_flops

REPO = Path(__file__).resolve().parents[1]

ARTIFACT = "final_model.pga"


def start(args) -> None:
    data_dir = args.work / "data"
    if not (data_dir / "tokenizers" / "fineweb_8192_bpe.model").is_file():
        train_h200.prepare_data(args.corpus, data_dir)
    run = args.work / "run"
    if run.exists():
        raise SystemExit(f"{run} exists: a run was started already; `wait` follows it")
    run.mkdir(parents=True)
    shutil.copy(args.bundle, run / "train_gpt.py")
    env = {**os.environ, "DATA_DIR": str(data_dir), "OUT_DIR": str(run), "SEED": str(args.seed),
           "RUN_ID": f"full_run_seed{args.seed}", "TRAIN_LOG_EVERY": "100"}
    env.update(kv.split("=", 1) for kv in args.set)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={args.nproc}", "train_gpt.py"]
    with open(run / "stdout.txt", "w") as sink:
        proc = subprocess.Popen(cmd, cwd=run, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    (run / "pid").write_text(str(proc.pid))
    print(f"launched pid {proc.pid}: {' '.join(cmd)} in {run}", flush=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A finished child of an exited parent may linger as a zombie: not running.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def wait(args) -> None:
    run = args.work / "run"
    pid = int((run / "pid").read_text())
    stdout, seen = run / "stdout.txt", 0
    deadline = time.monotonic() + args.wait
    while True:
        lines = stdout.read_text(errors="replace").splitlines()
        for line in lines[seen:]:
            if not line.startswith("  ") and "warmup_step" not in line:
                print(line, flush=True)
        seen = len(lines)
        if not _alive(pid):
            break
        if time.monotonic() > deadline:
            print(f"still running after {args.wait:.0f}s; run `wait` again", flush=True)
            return
        time.sleep(5)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ("train.log", "stdout.txt", ARTIFACT):
        if (run / name).is_file():
            shutil.copy(run / name, args.out / name)
    if not (run / "train.log").is_file():
        raise SystemExit("the run wrote no train.log; see stdout.txt")
    # The run has ended, so the GPU is free to measure its matmul rate, the MFU denominator.
    summary = summarize((run / "train.log").read_text(), train_h200.matmul_tflops())
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    text = "\n".join(f"- {k}: {v}" for k, v in summary.items()) + "\n"
    (args.out / "summary.md").write_text(text)
    print("\n" + text)


def summarize(log: str, tflops: float) -> dict:
    """The run's figures from its log; MFU against `tflops` per GPU (bf16 matmul, measured)."""
    def grab(pattern: str, cast=str):
        m = re.search(pattern, log, re.M)
        return cast(m[1]) if m else None

    steps = [(int(m[1]), float(m[2])) for m in re.finditer(
        r"^step:(\d+)/\d+ train_loss:\S+ train_time:(\S+)ms", log, re.M)]
    switch = grab(r"^layer_loop:enabled step:(\d+)", int)
    world = grab(r"^world_size:(\d+)", int)
    last, train_ms = steps[-1] if steps else (0, 0.0)
    times = dict(steps)
    logged = sorted(times)

    def rate(first: int, end: int) -> float | None:
        pts = [s for s in logged if first <= s <= end]
        return (times[pts[-1]] - times[pts[0]]) / (pts[-1] - pts[0]) if len(pts) > 1 else None

    before = rate(1, switch or last)
    after = rate(switch + 1, last) if switch else None
    phases = {m[1]: {"val_bpb": float(m[2]), "seconds": int(m[3]) / 1000}
              for m in re.finditer(r"^(quantized\w*) val_loss:\S+ val_bpb:(\S+) eval_time:(\d+)ms",
                                   log, re.M)}
    tokens = grab(r"^  train_batch_tokens: (\d+)$", int)
    # FLOPs of the preset's model (settings given on top of the preset are not read back).
    cfg = load_config({"PRESET": grab(r"^  preset: (\S+)$") or "record"})
    flops_plain, flops_loop = step_flops(cfg, False), step_flops(cfg, True)
    peak = world * tflops * 1e12 if world else float("nan")

    def mfu(flops: float, ms: float | None) -> float | None:
        return flops / (ms / 1000) / peak if ms else None

    total_flops = (switch or last) * flops_plain + (last - (switch or last)) * flops_loop
    return {
        "device": grab(r"^device: (.*)$"), "world_size": world,
        "grad_accum_steps": grab(r"grad_accum_steps:(\d+)", int),
        "steps": last, "train_time_s": train_ms / 1000,
        "stopped": grab(r"^stopping_early: (.*)$"),
        "ms_per_step_avg": train_ms / last if last else None,
        "ms_per_step_before_loop": before, "ms_per_step_after_loop": after,
        "tokens_per_s_per_gpu_avg": tokens / (train_ms / last) * 1000 / world if last else None,
        "tokens_per_s_per_gpu_before_loop": tokens / before * 1000 / world if before else None,
        "measured_bf16_tflops_per_gpu": tflops,
        "mfu_before_loop": mfu(flops_plain, before), "mfu_after_loop": mfu(flops_loop, after),
        "mfu_avg": total_flops / (train_ms / 1000) / peak if last else None,
        "peak_memory": grab(r"^peak memory allocated: (.*)$"),
        "val_bpb_pre_quant_ema": grab(r"^pre-quantization post-ema val_loss:\S+ val_bpb:(\S+)", float),
        "gptq": grab(r"^GPTQ:(.*)$"), "quantize": grab(r"^quantize:(.*)$"),
        "compression": grab(r"^compression: (.*)$"),
        "model_bytes": grab(r"^Serialized model quantized\+\w+: (\d+) bytes", int),
        "code_bytes": grab(r"^Code size \(compressed\): (\d+) bytes", int),
        "total_bytes": grab(r"^Total submission size quantized\+\w+: (\d+) bytes", int),
        "total_bytes_code_uncompressed": grab(
            r"^Total submission size quantized\+\w+ \(code uncompressed\): (\d+) bytes", int),
        "phases": phases,
        "ttt_compile_warmup": grab(r"^ttt:compile warmup .* ([\d.]+)s$", float),
        "total_eval_time_s": grab(r"^total_eval_time:([\d.]+)s", float),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["start", "wait", "summarize"])
    ap.add_argument("--bundle", type=Path, default=REPO / ".gpu" / "full" / "train_gpt.py")
    ap.add_argument("--corpus", type=Path, default=REPO / ".gpu" / "corpus")
    ap.add_argument("--work", type=Path, default=Path("/tmp/pgolf_full"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", REPO / "runs" / "full_run")))
    ap.add_argument("--nproc", type=int, default=8)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="A trainer setting for the run; repeatable.")
    ap.add_argument("--wait", type=float, default=540.0, help="Seconds `wait` follows the run.")
    ap.add_argument("--log", type=Path, help="summarize: the train.log to read again.")
    ap.add_argument("--tflops", type=float, help="summarize: the bf16 matmul rate per GPU.")
    args = ap.parse_args()
    if args.action == "summarize":  # a kept log, anywhere: no GPU needed
        if args.log is None or args.tflops is None:
            ap.error("summarize needs --log LOG and --tflops RATE")
        print(json.dumps(summarize(args.log.read_text(), args.tflops), indent=2))
    else:
        start(args) if args.action == "start" else wait(args)


if __name__ == "__main__":
    main()
