"""The first steps' losses for a fixed seed and fixed batches: the check that a speed change
leaves what the trainer computes unchanged.

    python -m benchmarks.loss_curve run --out before.json                 # at the old commit
    python -m benchmarks.loss_curve run --out after.json                  # at the new one
    python -m benchmarks.loss_curve compare before.json after.json

`run` builds the model as `pgolf train` does (`build_model`, torch.compile on CUDA, Muon + AdamW)
and trains --steps steps with the trainer's own `train_step` (bf16 autocast on CUDA, accumulation
8, clipping), every step on the same 8 random micro-batches (no data needed), at the initial
learning rates and momentum, with depth recurrence off or, with --looping, on. `compare` prints
both curves and the largest difference, and exits 1 when it is over --tolerance, which sits
well above what bf16 reassociation alone moves (docs/benchmarks.md, "Against the record script,
kernel by kernel").
"""

from __future__ import annotations

import argparse
import json
import types
from pathlib import Path


class FixedBatches:
    """A loader that hands out the same micro-batches, in order, forever."""

    def __init__(self, batches):
        self.batches, self.i = batches, 0

    def next_batch(self, seq_len=None):  # the batches' own windows
        self.i += 1
        return self.batches[(self.i - 1) % len(self.batches)]


def run(args: argparse.Namespace) -> None:
    import torch

    from benchmarks.step_profile import make_batches
    from trainer.config import load_config
    from trainer.distributed import Dist
    from trainer.evaluate import autocast
    from trainer.model import build_model
    from trainer.optim import build_optimizers
    from trainer.train import train_step

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.set_float32_matmul_precision("high")
    overrides = dict(item.split("=", 1) for item in args.set)
    cfg = load_config({"PRESET": args.preset, "SEED": str(args.seed)}, overrides)
    torch.manual_seed(cfg.seed)
    model, attention = build_model(cfg, device)
    model.looping_active = args.looping
    net = model
    if cfg.compile and device.type == "cuda":
        net = torch.compile(model, dynamic=False, fullgraph=True)
    opts = build_optimizers(cfg, model, Dist())
    # What train_step reads of a Run: one process, so 8 accumulation micro-batches per step.
    run_view = types.SimpleNamespace(cfg=cfg, dist=Dist(), device=device,
                                     autocast=lambda: autocast(device))
    loader = FixedBatches(make_batches(cfg, Dist().grad_accum_steps, device,
                                        model.takes_segment_bounds))
    losses = []
    for step in range(args.steps):
        losses.append(train_step(run_view, net, loader, opts, cfg.train_seq_len).item())
        print(f"step {step + 1}/{args.steps} loss {losses[-1]:.6f}", flush=True)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    record = {"preset": args.preset, "seed": cfg.seed, "looping": args.looping,
              "device": device_name, "torch": torch.__version__, "attention": attention,
              "settings": overrides, "mlp_kernel": "quack" if model.blocks[0].mlp.fused else "torch",
              "losses": losses}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")


def read_curve(path: Path) -> dict:
    try:
        curve = json.loads(path.read_text())
        if not isinstance(curve, dict) or not all(isinstance(x, float) for x in curve["losses"]):
            raise ValueError("no list of losses")
        return curve
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"loss_curve: {path} is not a curve written by `loss_curve.py run` ({exc})") from None


def compare(args: argparse.Namespace) -> None:
    a, b = read_curve(args.a), read_curve(args.b)
    setup = ("preset", "seed", "looping")
    if any(a.get(k) != b.get(k) for k in setup) or len(a["losses"]) != len(b["losses"]):
        raise SystemExit("loss_curve: the two runs differ in preset, seed, looping or step count; "
                         "rerun one of them with the other's settings")
    for name, curve in ((args.a.name, a), (args.b.name, b)):
        print(f"{name:>24s}  " + " ".join(f"{loss:.5f}" for loss in curve["losses"]))
    worst = max(abs(x - y) for x, y in zip(a["losses"], b["losses"]))
    verdict = "same" if worst <= args.tolerance else "DIFFERENT"
    print(f"max |difference| {worst:.3g} over {len(a['losses'])} steps: {verdict} "
          f"(tolerance {args.tolerance:g})")
    if worst > args.tolerance:
        raise SystemExit(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train the first steps and write their losses")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--preset", default="record")
    r.add_argument("--steps", type=int, default=12)
    r.add_argument("--seed", type=int, default=1337)
    r.add_argument("--looping", action="store_true", help="depth recurrence on")
    r.add_argument("--set", action="append", default=[], metavar="NAME=value",
                   help="a trainer setting, e.g. ATTN_BACKEND=sdpa_cudnn (repeatable)")
    c = sub.add_parser("compare", help="the largest difference between two runs' losses")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--tolerance", type=float, default=1e-3)
    args = ap.parse_args()
    if args.command == "run":
        run(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
