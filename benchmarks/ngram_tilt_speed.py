"""What the n-gram tilt (NGRAM_TILT_ENABLED, trainer/ngram_tilt.py) costs one rank of a scoring
phase, on the device it runs on:

    python -m benchmarks.ngram_tilt_speed [--positions 6000000] [--vocab 8192] [--order 16]

A rank's share of FineWeb's validation stream is about 6.0 M positions on 8 GPUs. The stream
here is random tokens with every tenth stretch of 2,048 a copy of an earlier one (so the gate
opens somewhere; the table's size, which sets the cost, is about one row per position either
way). For each batch size, as the phases score (`quantized`: 32 windows of 2,048 positions;
`sliding`: 32 windows of 64 new positions each; LoRA TTT: 64 documents x 48 positions, its
table filled only between groups, so timed here at its largest, the whole share), it times the
hints and the table's updates over the whole share, then the scored loss of one batch of random
logits: the cross-entropy alone against the tilted loss.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from trainer.ngram_tilt import NgramTilt


def _clock(device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def stream(n: int, vocab: int, device) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (n + 1,), generator=gen)
    for start in range(20480, n - 2048, 20480):
        src = int(torch.randint(0, start - 2048, (1,), generator=gen))
        tokens[start:start + 2048] = tokens[src:src + 2048]
    return tokens.to(device)


def table_pass(tokens, batch: int, order: int, observe: bool) -> dict:
    """Hints for every position in batches of `batch`, each batch observed after (or, for LoRA
    TTT, a table of the whole share, never updated)."""
    device, n = tokens.device, tokens.numel() - 1
    tilt = NgramTilt(order, 0.8, 2.625, device)
    if not observe:
        tilt.observe(tokens, torch.arange(n, device=device))
    hint_s = update_s = 0.0
    gated = 0
    for lo in range(0, n, batch):
        last = torch.arange(lo, min(lo + batch, n), device=device)
        t0 = _clock(device)
        _, boost = tilt.hints(tokens, last)
        t1 = _clock(device)
        gated += int((boost > 0).sum())
        if observe:
            tilt.observe(tokens, last)
        update_s += _clock(device) - t1
        hint_s += t1 - t0
    return {"batches": -(-n // batch), "hints_s": hint_s, "updates_s": update_s,
            "gated": gated / n, "table_rows": tilt.pair_ctx.numel()}


def loss_cost(batch: int, vocab: int, device, repeats: int = 5) -> dict:
    gen = torch.Generator(device=device).manual_seed(0)
    logits = torch.randn(batch, vocab, generator=gen, device=device).bfloat16()
    y = torch.randint(0, vocab, (batch,), generator=gen, device=device)
    hint = torch.randint(0, vocab, (batch,), generator=gen, device=device)
    boost = torch.full((batch,), 2.625, device=device)
    out = {}
    for name, fn in (("ce_ms", lambda: F.cross_entropy(logits.float(), y, reduction="none")),
                     ("tilted_ms", lambda: NgramTilt.tilted_nll(logits, y, hint, boost))):
        fn()
        t0 = _clock(device)
        for _ in range(repeats):
            fn()
        out[name] = (_clock(device) - t0) / repeats * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=6_000_000)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--order", type=int, default=16)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tokens = stream(args.positions, args.vocab, device)
    print(f"device {torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'}, "
          f"{args.positions:,} positions, vocab {args.vocab}, order {args.order}")
    for name, batch, observe in (("quantized", 32 * 2048, True), ("sliding", 32 * 64, True),
                                 ("lora_ttt", 64 * 48, False)):
        t = table_pass(tokens, batch, args.order, observe)
        loss = loss_cost(batch, args.vocab, device)
        gate = f", gate open at {t['gated']:.1%}" if observe else ""
        print(f"{name}: {t['batches']} batches of {batch}: hints {t['hints_s']:.2f}s, table updates "
              f"{t['updates_s']:.2f}s ({t['table_rows']:,} rows){gate}; per batch: cross-entropy "
              f"{loss['ce_ms']:.2f} ms, tilted {loss['tilted_ms']:.2f} ms")


if __name__ == "__main__":
    main()
