"""Run folders shaped like the ones `pgolf train --out RUN_DIR` writes, for packaging tests.

Each folder holds the script that ran (`train_gpt.py`), a rank-0 `train.log` in the challenge's
line formats (the contract the trainer writes) and an artifact file. Figures vary by seed so that
means, spreads and per-seed fields can be told apart.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from audits.submission import codesize

SAMPLE_SCRIPT = (Path(__file__).parent / "data" / "train_gpt_sample.py").read_bytes()
SEEDS = (42, 314, 999)
# 0.0045 below the 2026-04-08 record (1.0822): a record by the README's significance test.
BPB = {42: 1.07629352, 314: 1.07671540, 999: 1.07583417}


def run_log(seed: int, script: bytes = SAMPLE_SCRIPT, *, bpb: float | None = None,
            train_ms: int = 592054, steps: int = 4550, model_bytes: int | None = None,
            total_counts: str = "compressed", eval_phases=(("quantized", 7531),
                                                          ("quantized_sliding_window", 83990),
                                                          ("quantized_ttt", 366525)),
            total_eval_s: float | None = 458.0, nan_at_step: int | None = None,
            code_sha256: str | None = None, val_tokens: int = 40540160, gpus: int = 8,
            extra_hparams: dict[str, str] | None = None, minified_hash: bool = True) -> str:
    """The rank-0 log of one run. `total_counts` says which code size the logged total uses;
    `minified_hash` adds the `code_minified_sha256:` line pgolf's trainer writes."""
    bpb = BPB.get(seed, 1.081) if bpb is None else bpb
    loss = bpb * 2.5838  # nats per token over bits per byte for sp8192 FineWeb val
    model_bytes = 15_861_000 + (seed % 97) * 1013 if model_bytes is None else model_bytes
    code_sha256 = hashlib.sha256(script).hexdigest() if code_sha256 is None else code_sha256
    plain = len(script)
    packed = len(codesize.shipped_form(codesize.read_source(script)))
    hparams = {"data_dir": "./data/", "datasets_dir": "./data/datasets/fineweb10B_sp8192",
               "eval_stride": "64", "gptq_reserve_seconds": "8.0", "iterations": "20000",
               "matrix_lr": "0.022", "max_wallclock_seconds": "600.0", "model_dim": "512",
               "num_layers": "11", "run_id": f"seed{seed}", "seed": str(seed),
               "train_batch_tokens": "786432", "ttt_enabled": "True", "vocab_size": "8192",
               "world_size": str(gpus), **(extra_hparams or {})}
    lines = ["Hyperparameters:"] + [f"  {k}: {v}" for k, v in sorted(hparams.items())]
    lines += [f"seed:{seed}", f"code_sha256: {code_sha256}"]
    if minified_hash:
        minified = codesize.minify(script.decode("utf-8")).encode("utf-8")
        lines.append(f"code_minified_sha256: {hashlib.sha256(minified).hexdigest()}")
    lines += [
              "Running Python 3.10.12 (main, Mar  3 2026, 11:56:32) [GCC 11.4.0]",
              "Running PyTorch 2.9.1+cu128",
              "+-----------------------------------------------------------------------------------------+",
              "| NVIDIA-SMI 570.211.01             Driver Version: 570.211.01     CUDA Version: 12.8     |"]
    for i in range(gpus):
        lines.append(f"|   {i}  NVIDIA H100 80GB HBM3          On  |   00000000:{4 + i:02X}:00.0 Off |"
                     "                    0 |")
    lines += [f"val_tokens: {val_tokens}", "train_shards: 80",
              "gptq:reserving 8.0s, effective=592000ms",
              "step:0/20000 val_loss:9.0090 val_bpb:3.4877 train_time:0ms step_avg:0.01ms"]
    avg = train_ms / steps
    for step in [1, 2, 3] + list(range(500, steps, 500)) + [steps]:
        step_loss = 2.75 + 6.3 * 500 / (500 + 3 * step) + (seed % 7) * 0.002
        shown = "nan" if nan_at_step is not None and step >= nan_at_step else f"{step_loss:.4f}"
        lines.append(f"step:{step}/20000 train_loss:{shown} train_time:{round(avg * step)}ms "
                     f"step_avg:{avg:.2f}ms tok/s:{round(786432 / avg * 1000)}")
    lines += [f"stopping_early: wallclock_cap train_time:{train_ms}ms step:{steps}/20000",
              f"step:{steps}/20000 val_loss:{loss + 0.02:.4f} val_bpb:{bpb + 0.008:.4f} "
              f"train_time:{train_ms}ms step_avg:{avg:.2f}ms",
              "peak memory allocated: 39045 MiB reserved: 39124 MiB",
              "GPTQ:collected 67 Hessians in 3.5s",
              f"pre-quantization post-ema val_loss:{loss + 0.01:.8f} val_bpb:{bpb + 0.004:.8f} "
              "eval_time:7440ms",
              f"Serialized model quantized+brotli: {model_bytes} bytes",
              f"Code size (uncompressed): {plain} bytes",
              f"Code size (compressed): {packed} bytes",
              "Total submission size quantized+brotli: "
              f"{model_bytes + (packed if total_counts == 'compressed' else plain)} bytes"]
    for i, (name, ms) in enumerate(eval_phases):
        phase_bpb = bpb + 0.02 * (len(eval_phases) - 1 - i)
        phase_loss = phase_bpb * 2.5838
        lines.append(f"{name} val_loss:{phase_loss:.4f} val_bpb:{phase_bpb:.4f} eval_time:{ms}ms")
        lines.append(f"{name}_exact val_loss:{phase_loss:.8f} val_bpb:{phase_bpb:.8f}")
    if total_eval_s is not None:
        lines.append(f"total_eval_time:{total_eval_s:.1f}s")
    return "\n".join(lines) + "\n"


def write_run(root: Path, seed: int, script: bytes = SAMPLE_SCRIPT, log: str | None = None,
              **log_options) -> Path:
    """A run folder at `root`: the script that ran, its log, and an artifact blob."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "train_gpt.py").write_bytes(script)
    text = run_log(seed, script, **log_options) if log is None else log
    (root / "train.log").write_text(text, encoding="utf-8")
    (root / "final_model.int6.ptz").write_bytes(bytes(range(256)) * 16)
    return root


def write_runs(base: Path, seeds=SEEDS, **log_options) -> list[Path]:
    return [write_run(base / f"run_seed{seed}", seed, **log_options) for seed in seeds]


def tree(root: Path) -> list[str]:
    """Every path under `root`, relative and sorted: to assert that nothing was written."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []
