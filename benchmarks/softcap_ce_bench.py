"""Forward + backward time of the softcapped cross-entropy: compiled PyTorch ops vs the fused op.

    python -m benchmarks.softcap_ce_bench [--rows 98304] [--vocab 8192]

The defaults are one micro-batch of the record preset's head (bf16 logits). Prints the median of
20 timed runs after warmup for each, the largest difference of the losses, and the largest
difference of the gradients relative to the largest gradient entry. The compiled formula is the
model's, which takes tanh of bf16 logits in bf16; the fused op computes s in fp32, so the two
differ by about bf16 rounding.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F

from trainer.config import load_config
from trainer.softcap_ce import softcapped_cross_entropy

SOFTCAP = load_config({"PRESET": "record"}).logit_softcap


def compiled_formula(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """What the model computes without the fused op."""
    s = SOFTCAP * torch.tanh(logits / SOFTCAP)
    return F.cross_entropy(s.float(), targets)


def fused(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return softcapped_cross_entropy(logits, targets, SOFTCAP)


def forward_backward(fn, logits, targets):
    loss = fn(logits, targets)
    return loss, torch.autograd.grad(loss, logits)[0]


def median_ms(fn, logits, targets, warmup=3, runs=20) -> float:
    for _ in range(warmup):  # the first calls compile
        forward_backward(fn, logits, targets)
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        forward_backward(fn, logits, targets)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=98304)
    parser.add_argument("--vocab", type=int, default=8192)
    args = parser.parse_args()
    torch.manual_seed(0)
    logits = (torch.randn(args.rows, args.vocab, device="cuda") * 10).bfloat16().requires_grad_()
    targets = torch.randint(0, args.vocab, (args.rows,), device="cuda")
    candidates = {"compiled formula": torch.compile(compiled_formula, fullgraph=True, dynamic=False),
                  "fused op": fused}
    results = {}
    for name, fn in candidates.items():
        print(f"{name:>16}: {median_ms(fn, logits, targets):.3f} ms forward + backward")
        results[name] = forward_backward(fn, logits, targets)
    (loss_a, grad_a), (loss_b, grad_b) = results.values()
    grad_diff = (grad_a.float() - grad_b.float()).abs().max() / grad_a.float().abs().max()
    print(f"max |loss difference| {(loss_a - loss_b).abs().item():.3e}, "
          f"max |gradient difference| / max |gradient| {grad_diff.item():.3e}")


if __name__ == "__main__":
    main()
