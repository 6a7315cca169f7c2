"""A participant's path on one machine, every phase timed: data -> train (whose last phases are the
export, fitted under the cap by itself, and the sliding-window and TTT evaluations) -> package ->
audit, each the pgolf command a participant types, run as a subprocess.

    python -m benchmarks.user_path --docs DOCS --tokenizer MODEL --work WORK \\
        [--seconds 120] [--dataset NAME] [--caseops] [--set NAME=VALUE ...]

  data     pgolf data shards DOCS --tokenizer MODEL into WORK/data/datasets/NAME, the tokenizer
           beside them in WORK/data/tokenizers/ (NAME, default stand_in_sp<V>, names the data as
           its own dataset: the audit then holds it to no published split's token count),
           with --caseops the CaseOps shards and their byte sidecar (MODEL trained with it);
  train    pgolf train --set DATA_PATH=... TOKENIZER_PATH=... MAX_WALLCLOCK_SECONDS=S --seed 42;
  package  pgolf package of that one run on the non-record track (the record track wants three
           seeds), which audits the folder it writes;
  audit    pgolf audit of that folder, again, as a reviewer would.

It prints one line per phase and writes WORK/user_path.json: each command's wall time, and from
train.log the training time, the GPTQ calibration, the compression, the cap fitting (pruned
levels and their val_bpb cost, when any), the evaluation time, the bytes and the scores.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from audits.submission.logparse import parse_log

SEED = 42


def pgolf(*args, log: Path) -> float:
    """Run one pgolf command (its output appended to `log`); its wall seconds."""
    started = time.perf_counter()
    with open(log, "a") as sink:
        sink.write(f"$ pgolf {' '.join(map(str, args))}\n")
        sink.flush()
        done = subprocess.run([sys.executable, "-m", "pgolf_cli", *map(str, args)], stdout=sink,
                              stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    if done.returncode > 1:  # 1 is a folder packaged whose audit is not clean: audited below
        raise SystemExit(f"pgolf {args[0]} exited {done.returncode} after {seconds:.0f} s; see {log}")
    return seconds


def train_figures(text: str) -> dict:
    """What the run's log says about its phases."""
    log = parse_log(text)

    def line(pattern: str) -> re.Match | None:
        return re.search(pattern, text, re.M)

    compression = line(r"^compression: (\w+) ([\d,]+) bytes in ([\d.]+)s")
    sample = line(r"^compression:sample .* in ([\d.]+)s, lzma [\d,]+ bytes in ([\d.]+)s")
    fit = line(r"^export:fit pruned ([\d,]+) of ([\d,]+) .* in ([\d.]+)s$")
    cost = line(r"^export:fit cost .*\(([+-][\d.]+);")
    return {
        "steps": log.step_count,
        "train_seconds": log.stop.value / 1000 if log.stop else
        (log.steps[-1].train_time_ms / 1000 if log.steps and log.steps[-1].train_time_ms else None),
        "gptq_hessian_seconds": log.hessians.value if log.hessians else None,
        "compressor": compression and compression.group(1),
        "compress_seconds": compression and float(compression.group(3)),
        "compressor_sample_seconds": sample and max(float(sample.group(1)), float(sample.group(2))),
        "pruned_levels": int(fit.group(1).replace(",", "")) if fit else 0,
        "fit_seconds": fit and float(fit.group(3)),
        "pruning_cost_bpb": cost and float(cost.group(1)),
        "eval_seconds": log.total_eval_time_ms.value / 1000 if log.total_eval_time_ms else None,
        "total_bytes": log.totals[-1][1].value if log.totals else None,
        "val_bpb": {m.name: m.val_bpb for m in log.metrics
                    if not m.name.endswith("_exact") and not m.name.startswith("step:")},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, required=True, help="JSONL documents (may be .xz)")
    parser.add_argument("--tokenizer", type=Path, required=True, help="SentencePiece .model")
    parser.add_argument("--work", type=Path, required=True, help="a new folder for everything")
    parser.add_argument("--seconds", type=float, default=120.0, help="MAX_WALLCLOCK_SECONDS")
    parser.add_argument("--dataset", default=None, help="the data's name (default stand_in_sp<V>)")
    parser.add_argument("--num-val-docs", type=int, default=None,
                        help="pgolf data shards' --num-val-docs (default: its own)")
    parser.add_argument("--caseops", action="store_true",
                        help="CaseOps shards (pgolf data shards --caseops; MODEL trained with it)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="more settings for pgolf train")
    args = parser.parse_args(argv)
    import sentencepiece as spm

    vocab = spm.SentencePieceProcessor(model_file=str(args.tokenizer)).vocab_size()
    name = args.dataset or f"stand_in_sp{vocab}"
    work = args.work
    if work.exists() and any(work.iterdir()):
        raise SystemExit(f"{work} is not empty; give a new folder")
    log = work / "commands.log"
    work.mkdir(parents=True, exist_ok=True)
    dataset, tokenizer = work / "data" / "datasets" / name, work / "data" / "tokenizers" / f"{name}.model"
    tokenizer.parent.mkdir(parents=True)
    shutil.copyfile(args.tokenizer, tokenizer)
    val = [] if args.num_val_docs is None else ["--num-val-docs", args.num_val_docs]
    caseops = ["--caseops"] if args.caseops else []
    phases = {"data": pgolf("data", "shards", args.docs, "--tokenizer", tokenizer, "--out-dir",
                            dataset, *val, *caseops, log=log)}
    print(f"data     {phases['data']:7.1f} s  {dataset}", flush=True)

    run = work / "run"
    settings = [f"DATA_PATH={dataset.resolve()}", f"TOKENIZER_PATH={tokenizer.resolve()}",
                f"VOCAB_SIZE={vocab}", f"MAX_WALLCLOCK_SECONDS={args.seconds:g}", *args.set]
    phases["train"] = pgolf("train", "--seed", SEED, "--out", run,
                            *[a for kv in settings for a in ("--set", kv)], log=log)
    figures = train_figures((run / "train.log").read_text(encoding="utf-8"))
    print(f"train    {phases['train']:7.1f} s  {figures['steps']} steps in "
          f"{figures['train_seconds']:.1f} s, {figures['total_bytes']:,} bytes "
          f"({figures['pruned_levels']:,} levels pruned), eval {figures['eval_seconds']:.1f} s, "
          f"val_bpb {figures['val_bpb']}", flush=True)

    records = work / "records"
    phases["package"] = pgolf("package", run, "--name", "user path", "--author", "pgolf",
                              "--github-id", "pgolf", "--track", "non_record_16mb", "--out",
                              records, log=log)
    [folder] = (records / "track_non_record_16mb").iterdir()
    print(f"package  {phases['package']:7.1f} s  {folder}", flush=True)
    started = time.perf_counter()
    audit = subprocess.run([sys.executable, "-m", "pgolf_cli", "audit", str(folder)],
                           capture_output=True, text=True)
    phases["audit"] = time.perf_counter() - started
    verdict = "PASS" if audit.returncode == 0 else f"exit {audit.returncode}"
    print(f"audit    {phases['audit']:7.1f} s  {verdict}", flush=True)
    with open(log, "a") as sink:
        sink.write(f"$ pgolf audit {folder}\n{audit.stdout}{audit.stderr}")
    summary = {"phases_seconds": phases, "train": figures, "audit": verdict,
               "folder": str(folder), "dataset": name}
    (work / "user_path.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"total    {sum(phases.values()):7.1f} s  (summary in {work / 'user_path.json'})")
    if audit.returncode != 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
