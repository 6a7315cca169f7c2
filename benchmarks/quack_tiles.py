"""Time quack's four GEMMs of the MLP and the residual adds at a set of Hopper tiles and clusters.

    python -m benchmarks.quack_tiles

One micro-batch of the record preset (98,304 tokens, dim 512, hidden 2,048, bf16): the up
projection with LeakyReLU(0.5)^2 in its epilogue, the down projection and the attention's
projection with the residual read in theirs, and the backward's GEMM with the activation's
derivative. For each, every tile x cluster below (`triton.testing.do_bench`, 25 ms warm-up,
100 ms of repeats), then quack's default again: its two figures show the timing's noise. Each
line gives the largest difference from the default's output (the tile changes only the order
of the sums). Needs a Hopper GPU and quack (`pip install 'pgolf[gpu]'`).
"""

from __future__ import annotations

import argparse
import sys

import torch

TOKENS, DIM, HIDDEN = 48 * 2048, 512, 2048
# (tile m, tile n, pingpong); the first is quack's Hopper default, with the first cluster.
TILES = [(128, 192, True), (128, 128, True), (128, 256, False), (256, 128, False),
         (192, 128, True), (256, 192, False), (256, 160, False), (128, 160, True)]
CLUSTERS = [(2, 1), (1, 2)]


def gemms() -> dict:
    """name -> fn(config or None) -> the GEMM's output, on random inputs at the record's shapes."""
    from quack.gemm_interface import gemm_tuned

    from trainer.mlp_gemm import epilogues

    up, down = epilogues()
    torch.manual_seed(0)

    def new(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)

    x = new(TOKENS, DIM)
    w_fc, w_proj = new(HIDDEN, DIM) / DIM**0.5, new(DIM, HIDDEN) / HIDDEN**0.5
    w_o = new(DIM, DIM) / DIM**0.5
    residual, post = new(TOKENS, DIM), new(TOKENS, HIDDEN)
    pre, dy = new(TOKENS, HIDDEN), new(TOKENS, DIM)

    def add(a, w, config):
        out = torch.empty(a.size(0), w.size(0), device="cuda", dtype=a.dtype)
        gemm_tuned.fn(a, w.t(), out, residual, config=config)
        return out

    return {
        f"MLP up + LeakyReLU^2, {DIM} -> {HIDDEN}":
            lambda c: up(x, w_fc.t(), config=c, tuned=False)["postact"],
        f"MLP down + residual, {HIDDEN} -> {DIM}": lambda c: add(post, w_proj, c),
        f"attention projection + residual, {DIM} -> {DIM}": lambda c: add(x, w_o, c),
        f"MLP backward + derivative, {DIM} -> {HIDDEN}":
            lambda c: down(dy, w_proj, C=pre, config=c, tuned=False)["D"],
    }


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        sys.exit("quack_tiles: needs a Hopper GPU (H100, H200); none is visible here")
    try:
        from quack.gemm_config import GemmConfig
        from triton.testing import do_bench
    except ImportError as exc:
        sys.exit(f"quack_tiles: {exc}; install the GPU kernels with pip install 'pgolf[gpu]'")
    for name, fn in gemms().items():
        default = fn(None)
        for (m, n, pingpong), (cm, cn) in ((t, c) for t in TILES for c in CLUSTERS):
            config = GemmConfig(tile_m=m, tile_n=n, pingpong=pingpong, cluster_m=cm, cluster_n=cn,
                                is_dynamic_persistent=False, device_capacity=9)
            kind = "pingpong" if pingpong else "cooperative"
            label = f"{name}, tile {m} x {n} {kind}, cluster {cm} x {cn}"
            try:
                diff = (fn(config).float() - default.float()).abs().max().item()
                us = 1000 * do_bench(lambda: fn(config), warmup=25, rep=100)
                print(f"{label}: {us:.1f} us (difference {diff:.2g})", flush=True)
            except Exception as exc:  # a tile quack cannot build for this GEMM: say so, go on
                print(f"{label}: failed ({type(exc).__name__}: {str(exc)[:100]})", flush=True)
        us = 1000 * do_bench(lambda: fn(None), warmup=25, rep=100)
        print(f"{name}, quack's default: {us:.1f} us", flush=True)


if __name__ == "__main__":
    main()
