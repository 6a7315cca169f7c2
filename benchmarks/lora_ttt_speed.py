"""Time and memory of per-document LoRA TTT (TTT_MODE=lora) for one rank, on one GPU.

    python -m benchmarks.lora_ttt_speed [--docs 6250 | --val-shard VAL_SHARD] [--compile]
        [--count-only] [--set NAME=VALUE ...]

The record model at the frontier preset (loops on, its initial weights: the cost does not depend
on what the weights are) runs `trainer.doc_ttt.eval_doc_ttt` over a stream: by default a
synthetic one of --docs documents whose lengths follow a log-normal of mean 957 tokens
(FineWeb's validation set: 47.85 M tokens in 50,000 documents; sigma 1.0, a long tail), with PR
#1953's LoRA TTT settings; 6,250 documents are one rank's share of the 8-GPU evaluation, and
TTT_PHASE_DOCS is scaled by the same share, so the SGD phases train on as many positions per rank
as the real run's. With --val-shard, that validation stream as the trainer cuts it, at the
frontier preset with TTT_MODE=lora (the settings a `frontier+lora_ttt` run evaluates with).
It prints the work of the adapter pass per phase group (rows x padded window width summed over
its steps; --count-only stops there, on the CPU), then warms the pass at every shape it meets
(`trainer.doc_ttt.warm_lora_pass`, as the trainer does before its evaluation timer; with --compile the
pass's graph too, trainer.scoring.LORA_TTT_COMPILE) and runs it once, timing each: seconds,
window tokens per second, peak GPU memory. The pass logs each group's and SGD phase's end.
The 8-GPU evaluation takes about as long as its 6,250-document share (ranks work in parallel;
the SGD phases' all-reduces are left out here); any other stream's time follows from its work.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

FINEWEB_DOCS, FINEWEB_TOKENS, RANKS = 50_000, 47_851_520, 8
# The evaluation settings PR #1953 ran its LoRA TTT with (the SGD phases' rate and passes).
LORA_1953 = {"TTT_MODE": "lora", "EVAL_SEQ_LEN": "2560", "TTT_LR": "0.001", "TTT_EPOCHS": "1"}


def synthetic_stream(docs: int, seed: int = 0):
    import torch

    from trainer.shards import BOS_ID
    gen = torch.Generator().manual_seed(seed)
    mean, sigma = FINEWEB_TOKENS / FINEWEB_DOCS, 1.0
    mu = math.log(mean) - sigma ** 2 / 2
    lengths = (torch.randn(docs, generator=gen) * sigma + mu).exp().round().clamp(8, 100_000).long()
    tokens = torch.randint(2, 8192, (int(lengths.sum()) + 1,), generator=gen)
    tokens[torch.cumsum(lengths, 0) - lengths] = BOS_ID
    return tokens, lengths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=FINEWEB_DOCS // RANKS)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--val-shard", type=Path, help="this validation stream, not a synthetic one")
    parser.add_argument("--compile", action="store_true",
                        help="the compiled pass (trainer.scoring.LORA_TTT_COMPILE), not eager")
    parser.add_argument("--count-only", action="store_true",
                        help="print the stream's work and exit (CPU)")
    args = parser.parse_args(argv)
    bad = [s for s in args.set if "=" not in s]
    if bad:
        raise SystemExit(f"--set takes NAME=VALUE, got {bad[0]!r}")
    settings = dict(s.split("=", 1) for s in args.set)
    import torch

    if args.val_shard is not None:
        cfg = frontier_config({"TTT_MODE": "lora", **settings})
        tokens, phase_docs = shard_stream(args.val_shard, cfg), cfg.ttt_phase_docs
        print(f"tokens:{tokens.numel():,} eval_seq_len:{cfg.eval_seq_len} "
              f"chunk:{cfg.ttt_lora_chunk_tokens} batch_docs:{cfg.ttt_lora_batch_docs}", flush=True)
    else:
        cfg = frontier_config({**LORA_1953, **settings})
        tokens, lengths = synthetic_stream(args.docs)
        phase_docs = cfg.ttt_phase_docs * args.docs // FINEWEB_DOCS
        print(f"docs:{args.docs} tokens:{tokens.numel():,} mean_len:{lengths.float().mean():.0f} "
              f"max_len:{int(lengths.max())} phase_docs:{phase_docs} eval_seq_len:{cfg.eval_seq_len} "
              f"batch_docs:{cfg.ttt_lora_batch_docs}", flush=True)
    groups = group_work(tokens, cfg, phase_docs)
    for gi, (docs, work) in enumerate(groups):
        print(f"group {gi + 1}: docs:{docs} window_tokens:{work:,}")
    work = sum(w for _, w in groups)
    print(f"window_tokens:{work:,} (rows x padded width summed over the adapter steps)", flush=True)
    if args.count_only:
        return
    if not torch.cuda.is_available():
        raise SystemExit("the timed pass needs a CUDA GPU; --count-only counts its work on the CPU")
    time_pass(cfg, tokens, phase_docs, work, compiled=args.compile)


def time_pass(cfg, tokens, phase_docs: int, work: int, *, compiled: bool) -> None:
    import torch

    from trainer.doc_ttt import eval_doc_ttt, warm_lora_pass
    from trainer.lora import DocAdapters
    from trainer.model import build_model
    from trainer.scoring import LORA_TTT_COMPILE

    device = torch.device("cuda")
    model, attention = build_model(cfg, device)
    model.looping_active = True
    tokens = tokens.to(device)
    print(f"attention:{attention} compiled:{compiled}", flush=True)
    sgd = dict(chunk_tokens=cfg.ttt_chunk_tokens, epochs=cfg.ttt_epochs, lr=cfg.ttt_lr,
               momentum=cfg.ttt_momentum, grad_clip=cfg.ttt_grad_clip, batch_seqs=cfg.ttt_batch_seqs)
    logits_fn = torch.compile(model.forward_logits, **LORA_TTT_COMPILE) if compiled else None
    adapters = DocAdapters(model, cfg.ttt_lora_batch_docs, cfg.ttt_lora_rank, device)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    warm_lora_pass(model, adapters, seq_len=cfg.eval_seq_len, chunk=cfg.ttt_lora_chunk_tokens,
                   logits_fn=logits_fn or model.forward_logits)
    torch.cuda.synchronize()
    print(f"lora_ttt warmup seconds:{time.perf_counter() - t0:.1f}", flush=True)
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    loss, _ = eval_doc_ttt(model, tokens, lambda prev, tgt, pos: torch.ones_like(tgt),
                           seq_len=cfg.eval_seq_len, chunk=cfg.ttt_lora_chunk_tokens,
                           batch_docs=cfg.ttt_lora_batch_docs, lora_rank=cfg.ttt_lora_rank,
                           lr=cfg.ttt_lora_lr, phases=cfg.ttt_phases, phase_docs=phase_docs,
                           sgd=sgd, log=lambda line: print(line, flush=True),
                           logits_fn=logits_fn, adapters=adapters)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    print(f"lora_ttt pass seconds:{seconds:.1f} window_tokens_per_s:{work / seconds:,.0f} "
          f"peak_gib:{torch.cuda.max_memory_allocated() / 2**30:.1f} loss:{loss:.4f}", flush=True)


def group_work(tokens, cfg, phase_docs: int) -> list[tuple[int, int]]:
    """(documents, window tokens) of each phase group: for every batch, every step's rows x
    padded window width."""
    from trainer.doc_ttt import batch_work, doc_batches, documents, phase_groups
    chunk, groups = cfg.ttt_lora_chunk_tokens, []
    for group in phase_groups(documents(tokens), cfg.ttt_phases, phase_docs):
        work = sum(cfg.ttt_lora_batch_docs * batch_work(max(hi - lo for lo, hi in batch), chunk,
                                                        cfg.eval_seq_len)
                   for batch in doc_batches(group, cfg.ttt_lora_batch_docs))
        groups.append((len(group), work))
    return groups


def frontier_config(settings: dict[str, str]):
    """The frontier preset with these settings; a bad name or value is one line."""
    from trainer.config import load_config
    from trainer.errors import TrainerError
    try:
        return load_config(env={}, overrides={"PRESET": "frontier", **settings})
    except TrainerError as error:
        raise SystemExit(str(error)) from None


def shard_stream(path: Path, cfg):
    """The validation stream of `path` as the trainer cuts it; a missing file is one line."""
    from trainer.data import load_validation_tokens
    if not path.is_file():
        raise SystemExit(f"no validation shard at {path}")
    return load_validation_tokens([path], cfg.eval_seq_len).long()


if __name__ == "__main__":
    main()
