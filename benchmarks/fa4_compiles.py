"""What FlashAttention 4 costs the first time it meets a window width: dense causal attention.

    python -m benchmarks.fa4_compiles [--batch 64] [--widths 48,96,...]

Per-document TTT widens its windows a chunk at a time (PR #1855's script: 48 tokens a chunk, up
to 2,048), so one pass meets dozens of widths. For each width, in order, this times one forward
and backward through `trainer.fa4.fa4_attention` (the ops the trainer and the FA3 shim call) the
first time and again warm, at the record's head layout (8 query, 4 KV heads of 64, bf16, random
inputs). A first call far slower than the warm one compiled a kernel for that width.
"""

from __future__ import annotations

import argparse
import time

import torch

HEADS, KV_HEADS, HEAD_DIM = 8, 4, 64
WIDTHS = "48,96,144,192,480,960,1008,1488,2000,2016,2048"


def fwd_bwd_seconds(batch: int, width: int) -> float:
    from trainer.fa4 import fa4_attention

    q, k, v = (torch.randn(batch, width, heads, HEAD_DIM, device="cuda", dtype=torch.bfloat16,
                           requires_grad=True) for heads in (HEADS, KV_HEADS, KV_HEADS))
    torch.cuda.synchronize()
    start = time.perf_counter()
    fa4_attention(q, k, v).float().square().mean().backward()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64, help="windows per call (#1855's TTT batch)")
    parser.add_argument("--widths", default=WIDTHS, help="comma-separated window widths, in order")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU with FlashAttention 4 (flash_attn.cute) installed")
    try:
        widths = [int(w) for w in args.widths.split(",")]
    except ValueError:
        raise SystemExit(f"--widths: not comma-separated whole numbers: {args.widths!r}") from None
    print(f"{'width':>6} {'first s':>8} {'warm ms':>8}", flush=True)
    for width in widths:
        first = fwd_bwd_seconds(args.batch, width)
        warm = fwd_bwd_seconds(args.batch, width)
        print(f"{width:>6} {first:>8.2f} {1e3 * warm:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
