"""Evaluation speed of an artifact, and its per-token losses, for comparing two trainer versions.

    python -m benchmarks.eval_speed run ARTIFACT [--out DIR]                  # on a GPU
    python -m benchmarks.eval_speed compare OLD_DIR NEW_DIR                   # anywhere

`run` tokenizes the stand-in corpus' validation split (as benchmarks/train_h200.py), loads the
artifact into the record model with the loops on (as a run that trained past ENABLE_LOOPING_AT),
and evaluates it with the run loop's own `trainer.scoring.evaluate_artifact`:
  1. timed, on every validation token, with empty compile caches (as a fresh evaluation starts):
     the quantized, sliding-window and TTT phases, TTT's compile warmup (versions that
     compiled TTT's training step had one), the total;
  2. twice more on the first --trace-tokens tokens, recording the loss of every position the
     sliding and TTT phases score (DIR/nll_<phase>.npy and nll_<phase>_repeat.npy, float64),
     untimed: the repeat shows how far the same code moves per-token losses from run to run.
`compare` prints both runs' times and the speedup of sliding + TTT, then each phase's mean loss
in the old run, the new run and its repeat, and how far apart the per-token losses are. It exits
1 when a phase that the repeat reproduces token by token differs by more than --tolerance nats at
any position, or when a phase that it does not (TTT: training on a GPU is not bit-reproducible)
moves its mean loss by more than --tolerance.
To time an older version, copy this file into that version's checkout and run it from there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PHASES = ("quantized_sliding_window", "quantized_ttt")
# (name, log line, seconds per logged unit)
TIMES = (("quantized", r"^quantized val_loss:\S+ val_bpb:\S+ eval_time:(\d+)ms", 1e-3),
         ("sliding", r"^quantized_sliding_window val_loss:\S+ val_bpb:\S+ eval_time:(\d+)ms", 1e-3),
         ("ttt_warmup", r"^ttt:compile warmup .* ([\d.]+)s$", 1.0),
         ("ttt", r"^quantized_ttt val_loss:\S+ val_bpb:\S+ eval_time:(\d+)ms", 1e-3),
         ("total", r"^total_eval_time:([\d.]+)s", 1.0))


def seconds(lines: list[str]) -> dict[str, float]:
    text = "\n".join(lines)
    out = {}
    for name, pattern, unit in TIMES:
        found = re.search(pattern, text, re.M)
        if found:
            out[name] = float(found[1]) * unit
    return out


def run(args: argparse.Namespace) -> None:
    # Empty compile caches, so both versions pay their compilation as a fresh evaluation does.
    caches = Path(tempfile.mkdtemp(prefix="pgolf_eval_caches_"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(caches / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(caches / "triton")
    import numpy as np
    import torch

    from benchmarks.train_h200 import prepare_data
    from trainer.config import load_config
    from trainer.evaluate import load_validation
    from trainer.model import build_model
    from trainer.preflight import find_data
    from trainer.scoring import evaluate_artifact
    from trainer.sliding import Trace

    if not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a CUDA GPU")
    data_dir = args.work / "data"
    prepare_data(args.corpus, data_dir)
    cfg = load_config({"PRESET": "record", "DATA_DIR": str(data_dir)})
    device = torch.device("cuda")
    torch.set_float32_matmul_precision("high")
    data = find_data(cfg)
    val = load_validation(cfg, data.val, data.tokenizer, device)
    tokens = val.tokens.to(device).long()
    model, attention = build_model(cfg, device)
    model.looping_active = bool(cfg.num_loops)
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        if not line.startswith("ttt:chunk"):
            print(line, flush=True)

    evaluate_artifact(cfg, model, args.artifact, tokens, val.bytes_of, log=log)
    timed = seconds(lines)
    prefix = tokens[:args.trace_tokens + 1]
    args.out.mkdir(parents=True, exist_ok=True)
    traced_bpb = {}
    for suffix in ("", "_repeat"):
        traces = {name: Trace.for_stream(prefix.numel()) for name in PHASES}
        figures = evaluate_artifact(cfg, model, args.artifact, prefix, val.bytes_of, log=log,
                                    traces=traces)
        for name, trace in traces.items():
            np.save(args.out / f"nll_{name}{suffix}.npy", trace.nll.numpy())
            traced_bpb[name + suffix] = figures[name]["val_bpb"]
    summary = {"seconds": timed, "traced_tokens": prefix.numel(), "attention": attention,
               "traced_val_bpb": traced_bpb,
               "device": torch.cuda.get_device_name(), "torch": torch.__version__}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


def read_run(folder: Path) -> dict:
    """summary.json and the per-token losses of a `run` folder."""
    import numpy as np

    try:
        run = json.loads((folder / "summary.json").read_text())
        run["nll"] = {name: np.load(folder / f"nll_{name}.npy") for name in PHASES}
        for name in PHASES:  # written by `run` since it repeats the traced evaluation
            if (folder / f"nll_{name}_repeat.npy").is_file():
                run["nll"][name + "_repeat"] = np.load(folder / f"nll_{name}_repeat.npy")
        if not isinstance(run.get("seconds"), dict):
            raise ValueError("no phase times")
        return run
    except (OSError, ValueError, TypeError) as exc:
        raise SystemExit(f"eval_speed: {folder} is not a folder written by `eval_speed.py run` ({exc})") from None


def compare(args: argparse.Namespace) -> int:
    import numpy as np

    old, new = (read_run(d) for d in (args.old, args.new))
    print(f"{'phase':<12} {'old s':>8} {'new s':>8} {'speedup':>8}")
    for name, _, _ in TIMES:
        a, b = old["seconds"].get(name), new["seconds"].get(name)
        if a is not None and b is not None:
            print(f"{name:<12} {a:8.1f} {b:8.1f} {a / b:7.2f}x")
    parts = ("sliding", "ttt_warmup", "ttt")
    a, b = (sum(s["seconds"].get(p, 0.0) for p in parts) for s in (old, new))
    print(f"sliding + TTT (warmup included): {a:.1f} s -> {b:.1f} s, {a / b:.2f}x")
    failed = False
    for name in PHASES:
        runs = {"old": old["nll"][name], "new": new["nll"][name]}
        if name + "_repeat" in new["nll"]:
            runs["new repeat"] = new["nll"][name + "_repeat"]
        scored = ~np.isnan(runs["old"])
        if any(x.shape != scored.shape or not np.array_equal(scored, ~np.isnan(x))
               for x in runs.values()):
            print(f"{name}: the runs scored different positions")
            return 1
        means = {label: float(x[scored].mean()) for label, x in runs.items()}
        print(f"{name}: mean loss over {scored.sum():,} positions: "
              + ", ".join(f"{label} {m:.6f}" for label, m in means.items()))
        worst = {}
        for label in [k for k in runs if k != "old"]:
            a, b = ("old", "new") if label == "new" else ("new", label)
            diff = np.abs(runs[a][scored] - runs[b][scored])
            worst[label] = float(diff.max())
            print(f"{name}, {a} vs {b}: {int((diff > 0).sum()):,} differ, "
                  f"max |diff| {diff.max():.3g} nats, mean |diff| {diff.mean():.3g}")
        if worst.get("new repeat", 0.0) <= args.tolerance:
            failed |= worst["new"] > args.tolerance  # reproducible: every token must agree
        else:  # not reproducible token by token even within a version: compare the means
            failed |= abs(means["old"] - means["new"]) > args.tolerance
    return 1 if failed else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="time the evaluation of ARTIFACT and trace its per-token losses")
    r.add_argument("artifact", type=Path)
    r.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "runs/eval_speed")))
    r.add_argument("--corpus", type=Path, default=REPO / ".gpu" / "corpus")
    r.add_argument("--work", type=Path, default=Path("/tmp/pgolf_bench"), help="Shards go here.")
    r.add_argument("--trace-tokens", type=int, default=262144,
                   help="Validation tokens of the traced evaluation (8 TTT chunks by default).")
    c = sub.add_parser("compare", help="times and per-token loss differences of two runs")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--tolerance", type=float, default=1e-3,
                   help="Largest difference in nats that counts as the same: per token, or, for a "
                        "phase whose repeat already differs per token, of the mean loss.")
    args = ap.parse_args()
    if args.command == "run":
        run(args)
    else:
        raise SystemExit(compare(args))


if __name__ == "__main__":
    main()
