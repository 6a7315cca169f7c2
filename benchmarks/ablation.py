"""The frontier beside the record and beside its record's own script, each technique alone: arms
run in parallel on one host, one GPU each, then one table.

    python -m benchmarks.ablation run --docs DOCS --tokenizer MODEL --work WORK --gpus 4 \\
        [--seconds 180] [--num-val-docs 1030] [--caseops] \\
        [--record-script train_gpt.py --record-env benchmarks/pr1855.env \\
         --record-set EMA_DECAY=0.921 [--record-artifact final_model.int6.ptz]] ARM ...
    python -m benchmarks.ablation table WORK

An arm is `record`, `frontier`, `record+T` for a technique T of the frontier preset (its settings
as the preset has them: TECHNIQUES below), `frontier+X` for a technique X not in it (EXTRAS), or
`record_script`: the script of --record-script run by `benchmarks.record_script` on shards made
once in WORK/data, with --record-env's settings and then --record-set's (for what this run's
length changes: the record's EMA decay, 0.9965, is tuned for ~4,550 steps and leaves about half
the average at the initial weights after 200; pgolf rescales its own, `scaled_ema_decay`);
with --record-artifact, the script's TTT evaluation alone of the artifact an earlier run of it
saved (`benchmarks.record_script --artifact`), on the same shards.
Every other arm is `benchmarks.user_path` (data, train, package, audit) in WORK/ARM. At most
--gpus arms run at once, each seeing one GPU (CUDA_VISIBLE_DEVICES); an arm's output is
WORK/ARM.log. A run refuses to start on GPUs where nvidia-smi lists a process already: its
timings would be another process's too.

`table` prints, and writes to WORK/table.md, one row per arm: steps, ms/step, val_bpb before
quantization, quantized, sliding window and after TTT, bytes, evaluation seconds, and the TTT
score's change against the `record` arm.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from trainer.config import PRESETS, env_name, format_value

# The frontier preset's settings by technique, so that `record+T` is the record with T alone.
TECHNIQUES = {
    "smear_gate": ("smear_gate_enabled",),
    "sparse_attn_gate": ("sparse_attn_gate_enabled",),
    "lqer": ("lqer_enabled",),
    "int7_embed_clips": ("embed_bits", "embed_clip_sigmas", "mlp_clip_sigmas", "attn_clip_sigmas"),
    "settings": ("matrix_lr", "muon_momentum", "muon_ns_coeffs", "beta2", "warmdown_frac", "min_lr",
                 "qk_gain_init", "gptq_calibration_batches", "gptq_reserve_seconds"),
    "doc_mask": ("doc_mask",),
    "rans": ("compressor",),
    "lanes": ("parallel_lanes", "parallel_residual_start"),
    "lora_ttt": ("ttt_mode", "sliding_window_enabled"),
    "ngram_tilt": ("ngram_tilt_enabled",),
    "progressive": ("train_seq_schedule",),
}
# Techniques built but off in the frontier preset, with the values their records ran.
EXTRAS = {
    "awq": {"AWQ_GROUPS": "1"},                                          # PR #1908
}
RECORD_SCRIPT = "record_script"


def arm_settings(arm: str) -> dict[str, str]:
    """The `--set` settings of an arm other than the record script's."""
    frontier = PRESETS["frontier"]
    if arm == "record":
        return {}
    if arm == "frontier":
        return {"PRESET": "frontier"}
    base, _, technique = arm.partition("+")
    if base == "record" and technique in TECHNIQUES:
        return {env_name(name): format_value(frontier[name]) for name in TECHNIQUES[technique]}
    if base == "frontier" and technique in EXTRAS:
        return {"PRESET": "frontier", **EXTRAS[technique]}
    choices = ["record", "frontier", RECORD_SCRIPT, *(f"record+{t}" for t in TECHNIQUES),
               *(f"frontier+{x}" for x in EXTRAS)]
    raise SystemExit(f"unknown arm {arm!r}; one of: {', '.join(choices)}")


def run_parallel(jobs: dict[str, list[str]], gpus: int, work: Path):
    """Each job's command with its output in WORK/NAME.log, at most `gpus` at once, each seeing
    one GPU and its share of the CPU threads; yields (name, exit code) as each finishes."""
    pending, running = list(jobs.items()), {}
    free = list(range(gpus))
    # Each job's share of the host's cores for its CPU math (as torchrun sets for its ranks) and
    # its compiles: by default each would take them all, and together they oversubscribe the host.
    share = str(max(1, (os.cpu_count() or 1) // gpus))
    threads = {name: os.environ.get(name) or share
               for name in ("OMP_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS")}
    while pending or running:
        while pending and free:
            slot, (name, argv) = free.pop(0), pending.pop(0)
            with open(work / f"{name}.log", "w") as sink:
                proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT,
                                        env={**os.environ, **threads, "CUDA_VISIBLE_DEVICES": str(slot)})
            # Held until reaped: a dropped Popen is reaped by the next one's creation, and
            # os.wait would then miss it.
            running[proc.pid] = (name, slot, time.perf_counter(), proc)
            print(f"started  {name} on GPU {slot}", flush=True)
        pid, status = os.wait()
        if pid not in running:
            continue
        name, slot, started, proc = running.pop(pid)
        proc.returncode = os.waitstatus_to_exitcode(status)
        free.append(slot)
        print(f"finished {name}: exit {proc.returncode} after {time.perf_counter() - started:.0f} s",
              flush=True)
        yield name, proc.returncode


def run_arms(jobs: dict[str, list[str]], gpus: int, work: Path) -> dict[str, int]:
    """run_parallel, WORK/table.md rewritten each time an arm leaves a summary (a run cut off
    keeps the rows it had); the exit codes."""
    codes = {}
    for arm, code in run_parallel(jobs, gpus, work):
        codes[arm] = code
        if arm_row(work / arm) is not None:
            (work / "table.md").write_text(table(work))
    return codes


def _kind(name: str) -> str:
    """Which phase a score is, whatever the script calls it (pgolf: `quantized_ttt`; PR #1855:
    `quantized_ttt_phased`, `diagnostic quantized`, ...)."""
    for word, kind in (("pre-quantization", "pre"), ("ttt", "ttt"), ("sliding", "sliding"),
                       ("quantized", "quantized")):
        if word in name:
            return kind
    return "other"


def arm_row(folder: Path) -> dict | None:
    """An arm's figures from its summary, None where it left none."""
    if (folder / "user_path.json").exists():
        train = json.loads((folder / "user_path.json").read_text())["train"]
        scores, eval_seconds = train["val_bpb"], train["eval_seconds"]
    elif (folder / "record_script.json").exists():
        train = json.loads((folder / "record_script.json").read_text())
        scores = {name: score["val_bpb"] for name, score in train["scores"].items()}
        eval_seconds = train["total_eval_seconds"]
    else:
        return None
    phases = {"pre": None, "quantized": None, "sliding": None, "ttt": None}
    for name, bpb in scores.items():
        if phases.get(_kind(name), 0) is None:  # the first score of each kind
            phases[_kind(name)] = bpb
    steps, seconds = train["steps"], train["train_seconds"]
    return {"steps": steps, "ms_per_step": steps and seconds and 1000 * seconds / steps,
            "bytes": train["total_bytes"], "eval_seconds": eval_seconds, **phases}


def table(work: Path) -> str:
    if not work.is_dir():
        raise SystemExit(f"no folder {work}")
    rows = {folder.name: row for folder in sorted(work.iterdir()) if folder.is_dir()
            for row in [arm_row(folder)] if row is not None}
    if not rows:
        raise SystemExit(f"no arm's summary under {work}")
    base = rows.get("record", {}).get("ttt")

    def cell(value, spec):
        return "" if value is None else format(value, spec)

    lines = ["| arm | steps | ms/step | pre-quant | quantized | sliding | TTT | bytes | eval s "
             "| TTT vs record |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for arm, row in rows.items():
        delta = row["ttt"] - base if base is not None and row["ttt"] is not None else None
        lines.append(f"| {arm} | {cell(row['steps'], 'd')} | {cell(row['ms_per_step'], '.0f')} | "
                     f"{cell(row['pre'], '.4f')} | {cell(row['quantized'], '.4f')} | "
                     f"{cell(row['sliding'], '.4f')} | {cell(row['ttt'], '.4f')} | "
                     f"{cell(row['bytes'], ',')} | {cell(row['eval_seconds'], '.0f')} | "
                     f"{cell(delta, '+.4f')} |")
    return "\n".join(lines) + "\n"


def arm_commands(args) -> dict[str, list[str]]:
    """Every arm's command, each arm's name checked."""
    if len(set(args.arms)) != len(args.arms):
        raise SystemExit("an arm is named twice")
    if RECORD_SCRIPT in args.arms and args.record_script is None:
        raise SystemExit(f"the {RECORD_SCRIPT} arm needs --record-script")
    jobs = {}
    common = ["--seconds", f"{args.seconds:g}"]
    for arm in args.arms:
        if arm == RECORD_SCRIPT:
            jobs[arm] = [sys.executable, "-m", "benchmarks.record_script", str(args.record_script),
                         "--data", str(args.work / "data"), "--tokenizer", str(args.tokenizer),
                         "--work", str(args.work / arm), *common,
                         *(["--env-file", str(args.record_env)] if args.record_env else []),
                         *(a for item in args.record_set for a in ("--set", item)),
                         *(["--artifact", str(args.record_artifact)] if args.record_artifact else [])]
            continue
        settings = [a for name, value in arm_settings(arm).items() for a in ("--set", f"{name}={value}")]
        jobs[arm] = [sys.executable, "-m", "benchmarks.user_path", "--docs", str(args.docs),
                     "--tokenizer", str(args.tokenizer), "--work", str(args.work / arm), *common,
                     *data_options(args), *settings]
    return jobs


def data_options(args) -> list[str]:
    """The data options pgolf's arms and the record script's shards are both made with."""
    val = ["--num-val-docs", str(args.num_val_docs)] if args.num_val_docs is not None else []
    return val + (["--caseops"] if args.caseops else [])


def gpu_processes(gpus) -> dict[int, list[str]]:
    """The compute processes on each of these GPUs that has any, as nvidia-smi lists them; none
    where nvidia-smi is missing (a machine without GPUs)."""
    busy = {}
    for gpu in gpus:
        try:
            found = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader",
                                    f"--id={gpu}"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        if found.returncode == 0 and found.stdout.split():
            busy[gpu] = found.stdout.split()
    return busy


def run(args) -> None:
    if args.work.exists() and any(args.work.iterdir()):
        raise SystemExit(f"{args.work} is not empty; give a new folder")
    if args.gpus < 1:
        raise SystemExit(f"--gpus must be at least 1, got {args.gpus}")
    jobs = arm_commands(args)  # before anything runs
    busy = gpu_processes(range(args.gpus))
    if busy:
        gpu, pids = next(iter(busy.items()))
        raise SystemExit(f"GPU {gpu} is in use (process {', '.join(pids)}): an arm beside it would "
                         "time the sharing; wait for it to end")
    args.work.mkdir(parents=True, exist_ok=True)
    if RECORD_SCRIPT in jobs:
        shards = subprocess.run([sys.executable, "-m", "pgolf_cli", "data", "shards", str(args.docs),
                                 "--tokenizer", str(args.tokenizer), "--out-dir", str(args.work / "data"),
                                 *data_options(args)])
        if shards.returncode != 0:
            raise SystemExit(f"pgolf data shards exited {shards.returncode}")
    codes = run_arms(jobs, args.gpus, args.work)  # which wrote WORK/table.md as the arms ended
    print(table(args.work), end="")
    failed = [arm for arm, code in codes.items() if code != 0]
    if failed:
        raise SystemExit(f"arms that did not exit 0: {', '.join(failed)} (their logs: WORK/ARM.log)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    go = commands.add_parser("run", help="run the arms, then print the table")
    go.add_argument("arms", nargs="+", metavar="ARM")
    go.add_argument("--docs", type=Path, required=True, help="JSONL documents (may be .xz)")
    go.add_argument("--tokenizer", type=Path, required=True, help="SentencePiece .model")
    go.add_argument("--work", type=Path, required=True, help="a new folder for everything")
    go.add_argument("--gpus", type=int, default=1, help="arms at once, one GPU each")
    go.add_argument("--seconds", type=float, default=180.0, help="MAX_WALLCLOCK_SECONDS")
    go.add_argument("--num-val-docs", type=int, default=None, help="pgolf data shards' --num-val-docs")
    go.add_argument("--caseops", action="store_true", help="CaseOps shards (MODEL trained with it)")
    go.add_argument("--record-script", type=Path, help="the record's train_gpt.py")
    go.add_argument("--record-env", type=Path, help="its settings (NAME=VALUE lines)")
    go.add_argument("--record-set", action="append", default=[], metavar="NAME=VALUE",
                    help="one more setting of the record's script, after --record-env's")
    go.add_argument("--record-artifact", type=Path,
                    help="the record script's quantized model from an earlier run: its TTT alone")
    show = commands.add_parser("table", help="the table of a finished run")
    show.add_argument("work", type=Path)
    args = parser.parse_args(argv)
    if args.command == "table":
        text = table(args.work)
        print(text, end="")
        (args.work / "table.md").write_text(text)
    else:
        run(args)


if __name__ == "__main__":
    main()
