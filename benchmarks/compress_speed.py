"""Artifact compression, whole and in slices: size and seconds for each method.

    python -m benchmarks.compress_speed [--preset frontier] [--pieces 8]
    python -m benchmarks.compress_speed --artifact RUN_DIR/final_model.pga

The container is a model of the preset's shape with random weights (rows of different spreads,
as trained ones have), quantized with the preset's bits and clips by round-to-nearest: about the
size and level statistics of a real export, without training. With --artifact it is the
container inside a run's artifact instead: trained weights, as GPTQ quantized them.

For each method it compresses the container whole, then in `--pieces` equal slices on as many
threads (as trainer.compress does for brotli), and prints bytes and seconds for both; then the
order-0 entropy of each tensor's levels, summed (what an entropy coder with one table per tensor
can reach); the container's 1-byte section alone under brotli-11 and under rans with 1, 2, 4 and
8 classes of columns per matrix; and the rans artifact (COMPRESSOR=rans): its size, the seconds
to write and to read it back, and whether it read back exactly.
"""

from __future__ import annotations

import argparse
import lzma
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from trainer.artifact import _embeddings, quantization_settings
from trainer.compress import (BROTLI_WINDOW, _layout, _rans_split, compress_artifact,
                              decompress_artifact, pack_tensors, unpack_tensors)
from trainer.config import load_config
from trainer.model import GPT
from trainer.quant import QTensor, quantize_state_dict
from trainer.rans import rans_encode


def container(preset: str) -> bytes:
    torch.manual_seed(0)
    cfg = load_config({"PRESET": preset})
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 2:
                p.copy_(torch.randn_like(p) * 0.02 * torch.exp(0.3 * torch.randn(p.shape[0], 1)))
    return pack_tensors(quantize_state_dict(model.state_dict(), {}, embeddings=_embeddings(model),
                                            **quantization_settings(cfg)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="frontier")
    parser.add_argument("--pieces", type=int, default=8)
    parser.add_argument("--artifact", type=Path, help="a run's artifact: compress its container")
    args = parser.parse_args()
    import brotli

    methods = {"brotli": lambda b: brotli.compress(b, quality=11, lgwin=BROTLI_WINDOW),
               "lzma": lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME)}
    if args.artifact:
        data, origin = decompress_artifact(args.artifact.read_bytes()), str(args.artifact)
    else:
        data, origin = container(args.preset), f"{args.preset} preset, random weights"
    n, k = len(data), args.pieces
    print(f"container {n:,} bytes ({origin}), {os.cpu_count()} cores", flush=True)
    for name, fn in methods.items():
        t0 = time.perf_counter()
        whole = len(fn(data))
        t1 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=k) as pool:
            sliced = sum(map(len, pool.map(fn, [data[i * n // k:(i + 1) * n // k] for i in range(k)])))
        t2 = time.perf_counter()
        print(f"{name}: whole {whole:,} bytes in {t1 - t0:.1f}s; {k} slices {sliced:,} bytes "
              f"in {t2 - t1:.1f}s", flush=True)
    bits = 0.0
    for v in unpack_tensors(data).values():
        if isinstance(v, QTensor):
            p = torch.bincount(v.q.reshape(-1).long() + 128, minlength=256).double() / v.q.numel()
            bits -= float((p[p > 0] * p[p > 0].log2()).sum()) * v.q.numel()
    print(f"levels: order-0 entropy {bits / 8:,.0f} bytes", flush=True)
    _, sizes, start = _layout(data)
    section = data[start:start + sizes[0]]
    coded = {k: len(rans_encode(_rans_split(data, k)[0])) for k in (1, 2, 4, 8)}
    print(f"1-byte section alone: brotli-11 {len(methods['brotli'](section)):,} bytes; rans with "
          + ", ".join(f"{k} column classes {n:,}" for k, n in coded.items()), flush=True)
    t0 = time.perf_counter()
    artifact = compress_artifact(data, "rans")
    t1 = time.perf_counter()
    exact = decompress_artifact(artifact) == data
    print(f"rans: artifact {len(artifact):,} bytes in {t1 - t0:.1f}s, read back in "
          f"{time.perf_counter() - t1:.1f}s, exact: {exact}", flush=True)


if __name__ == "__main__":
    main()
