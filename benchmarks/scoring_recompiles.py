"""The scoring phases' compiled forward, timed batch by batch, to see recompilation.

    TORCH_LOGS=recompiles python -m benchmarks.scoring_recompiles NAME:SETTING=VALUE:... ...

Each argument is a variant: a name, then settings over the record preset (for example
`frontier:PRESET=frontier` or `nodoc:PRESET=frontier:DOC_MASK=0`). Each builds the model with
random weights (looping on), compiles it as the scoring phases do (`trainer.scoring._scoring_fn`)
and runs the `quantized` phase's windows over NTOK random tokens (default 600,000) holding a
document every ~700 tokens, timing every call of the compiled forward. Prints per variant the
first call (the compile), the next ten and the mean of the rest. Needs a CUDA GPU.
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch

from trainer.config import load_config
from trainer.model import build_model
from trainer.scoring import _scoring_fn
from trainer.shards import BOS_ID
from trainer.sliding import eval_stream


def tokens(n: int, vocab: int, device: torch.device) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    out = torch.randint(BOS_ID + 1, vocab, (n,), generator=g)
    out[torch.rand(n, generator=g) < 1 / 700] = BOS_ID
    out[0] = BOS_ID
    return out.to(device)


def _timed(fn, times: list[float]):
    """`fn`, each call's synchronized wall time appended to `times`."""

    def timed(x):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = fn(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        return y

    return timed


def main() -> None:
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a CUDA GPU")
    device = torch.device("cuda")
    torch.set_float32_matmul_precision("high")
    for variant in sys.argv[1:]:
        name, *settings = variant.split(":")
        cfg = load_config(dict(s.split("=", 1) for s in settings))
        stream = tokens(int(os.environ.get("NTOK", "600000")), cfg.vocab_size, device)
        model, _ = build_model(cfg, device)
        model.looping_active = True
        times = []
        timed = _timed(_scoring_fn(model, device, True), times)
        windows = max(1, cfg.val_batch_tokens // (cfg.eval_seq_len * 8))
        eval_stream(model, stream, lambda x, y, p: torch.ones_like(y), seq_len=cfg.eval_seq_len,
                    stride=cfg.eval_seq_len, batch_windows=windows, logits_fn=timed)
        print(name, json.dumps({"batches": len(times), "first_s": round(times[0], 2),
                                "next_s": [round(t, 3) for t in times[1:11]],
                                "rest_mean_s": round(sum(times[1:]) / max(1, len(times) - 1), 4)}),
              flush=True)
        del model, timed
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
