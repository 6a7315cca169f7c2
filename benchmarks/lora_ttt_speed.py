"""Time and memory of per-document LoRA TTT (TTT_MODE=lora) for one rank, on one GPU.

    python -m benchmarks.lora_ttt_speed [--docs 6250] [--compile | --count-only] [--set NAME=VALUE ...]
    python -m benchmarks.lora_ttt_speed --val-shard fineweb_val_000000.bin [--set NAME=VALUE ...]

The record model at the frontier preset with PR #1953's LoRA TTT settings (loops on, its
initial weights: the cost does not depend on what the weights are) runs
`trainer.doc_ttt.eval_doc_ttt` over a synthetic stream of --docs documents whose lengths follow a
log-normal of mean 957 tokens (FineWeb's validation set: 47.85 M tokens in 50,000 documents;
sigma 1.0, a long tail). 6,250 documents are one rank's share of the 8-GPU evaluation;
TTT_PHASE_DOCS is scaled by the same share, so the SGD phases train on as many positions per
rank as the real run's. It prints the work of the adapter pass (rows x window width summed over
its steps, padding included; --count-only stops there, on the CPU), then runs the pass twice
(the first compiles the attention kernels of each window width, and with --compile the pass's
graph, as the trainer's evaluation does when COMPILE is on), each time with its seconds, window
tokens per second and peak GPU memory.
The 8-GPU evaluation takes about as long as its 6,250-document share (ranks work in parallel;
the SGD phases' all-reduces are left out here); any other stream's time follows from its work.

With --val-shard it only counts, on the CPU: the work of each phase group of that validation
stream at the frontier preset with TTT_MODE=lora (the settings a `frontier+lora_ttt` run
evaluates with), so that a run's per-group times in its log become rates.
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
    parser.add_argument("--val-shard", type=Path, help="count this stream's work and exit")
    parser.add_argument("--compile", action="store_true",
                        help="the compiled pass (trainer.scoring.LORA_TTT_COMPILE), not eager")
    parser.add_argument("--count-only", action="store_true",
                        help="print the synthetic stream's work and exit (CPU)")
    args = parser.parse_args(argv)
    bad = [s for s in args.set if "=" not in s]
    if bad:
        raise SystemExit(f"--set takes NAME=VALUE, got {bad[0]!r}")
    settings = dict(s.split("=", 1) for s in args.set)
    if args.val_shard is not None:
        count_shard(args.val_shard, settings)
        return
    import torch

    from trainer.doc_ttt import eval_doc_ttt
    from trainer.model import build_model
    from trainer.scoring import LORA_TTT_COMPILE

    cfg = frontier_config({**LORA_1953, **settings})
    tokens, lengths = synthetic_stream(args.docs)
    phase_docs = cfg.ttt_phase_docs * args.docs // FINEWEB_DOCS
    print(f"docs:{args.docs} tokens:{tokens.numel():,} mean_len:{lengths.float().mean():.0f} "
          f"max_len:{int(lengths.max())} phase_docs:{phase_docs} eval_seq_len:{cfg.eval_seq_len} "
          f"batch_docs:{cfg.ttt_lora_batch_docs}", flush=True)
    work = window_tokens(tokens, cfg, phase_docs)
    print(f"window_tokens:{work:,} (rows x width summed over the adapter steps, padding included)")
    if args.count_only:
        return
    if not torch.cuda.is_available():
        raise SystemExit("the timed pass needs a CUDA GPU; --count-only counts its work on the CPU")
    device = torch.device("cuda")
    model, attention = build_model(cfg, device)
    model.looping_active = True
    tokens = tokens.to(device)
    print(f"attention:{attention} compiled:{args.compile}", flush=True)
    sgd = dict(chunk_tokens=cfg.ttt_chunk_tokens, epochs=cfg.ttt_epochs, lr=cfg.ttt_lr,
               momentum=cfg.ttt_momentum, grad_clip=cfg.ttt_grad_clip, batch_seqs=cfg.ttt_batch_seqs)
    logits_fn = torch.compile(model.forward_logits, **LORA_TTT_COMPILE) if args.compile else None
    state = {k: v.clone() for k, v in model.state_dict().items()}
    for run in ("first", "again"):  # the second pass has every kernel compiled
        model.load_state_dict(state)
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss, _ = eval_doc_ttt(model, tokens, lambda prev, tgt, pos: torch.ones_like(tgt),
                               seq_len=cfg.eval_seq_len, chunk=cfg.ttt_lora_chunk_tokens,
                               batch_docs=cfg.ttt_lora_batch_docs, lora_rank=cfg.ttt_lora_rank,
                               lr=cfg.ttt_lora_lr, phases=cfg.ttt_phases, phase_docs=phase_docs,
                               sgd=sgd, log=lambda line: print(line, flush=True),
                               logits_fn=logits_fn)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        print(f"lora_ttt {run} seconds:{seconds:.1f} window_tokens_per_s:{work / seconds:,.0f} "
              f"peak_gib:{torch.cuda.max_memory_allocated() / 2**30:.1f} loss:{loss:.4f}", flush=True)


def window_tokens(tokens, cfg, phase_docs: int) -> int:
    """What the adapter pass computes: for every batch, every chunk step's rows x window width."""
    return sum(work for _, work in group_work(tokens, cfg, phase_docs))


def group_work(tokens, cfg, phase_docs: int) -> list[tuple[int, int]]:
    """(documents, window tokens) of each phase group."""
    from trainer.doc_ttt import doc_batches, documents, phase_groups
    chunk, groups = cfg.ttt_lora_chunk_tokens, []
    for group in phase_groups(documents(tokens), cfg.ttt_phases, phase_docs):
        work = 0
        for batch in doc_batches(group, cfg.ttt_lora_batch_docs):
            longest = max(hi - lo for lo, hi in batch)
            work += sum(cfg.ttt_lora_batch_docs * min(cfg.eval_seq_len, c + chunk)
                        for c in range(0, longest, chunk))
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


def count_shard(path: Path, settings: dict[str, str]) -> None:
    from trainer.data import load_validation_tokens
    if not path.is_file():
        raise SystemExit(f"no validation shard at {path}")
    cfg = frontier_config({"TTT_MODE": "lora", **settings})
    tokens = load_validation_tokens([path], cfg.eval_seq_len).long()  # cut as the trainer cuts it
    print(f"tokens:{tokens.numel():,} eval_seq_len:{cfg.eval_seq_len} "
          f"chunk:{cfg.ttt_lora_chunk_tokens} batch_docs:{cfg.ttt_lora_batch_docs}")
    for gi, (docs, work) in enumerate(group_work(tokens, cfg, cfg.ttt_phase_docs)):
        print(f"group {gi + 1}: docs:{docs} window_tokens:{work:,}")


if __name__ == "__main__":
    main()
