"""Evaluate an artifact again, every phase the settings enable, on one or several GPUs.

    torchrun --standalone --nproc_per_node=N benchmarks/eval_artifact.py ARTIFACT

Settings come from the environment as for a run (DATA_DIR, PRESET, SLIDING_WINDOW_ENABLED,
TTT_ENABLED...). It rebuilds the model from the settings, loads the artifact and runs the run
loop's own evaluation (`trainer.scoring.evaluate_artifact`): the phases' figures and times are
printed in the run log's lines. For re-measuring evaluation without training again.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainer.attention import activate_backend, choose_backend  # noqa: E402
from trainer.bpb import build_byte_tables, load_tokenizer, target_bytes  # noqa: E402
from trainer.config import load_config  # noqa: E402
from trainer.data import load_validation_tokens  # noqa: E402
from trainer.distributed import dist_from_env, start, stop  # noqa: E402
from trainer.main import pick_device  # noqa: E402
from trainer.model import GPT  # noqa: E402
from trainer.preflight import preflight  # noqa: E402
from trainer.scoring import evaluate_artifact  # noqa: E402


def main() -> None:
    cfg = load_config()
    dist = dist_from_env()
    data = preflight(cfg)
    device = pick_device(dist)
    start(dist, device)
    log = print if dist.is_main else (lambda _line: None)
    tables = build_byte_tables(load_tokenizer(data.tokenizer, cfg.vocab_size), cfg.vocab_size).to(device)
    tokens = load_validation_tokens(data.val, cfg.eval_seq_len).to(device).long()
    model = GPT(cfg).to(device)
    # A run that trained past ENABLE_LOOPING_AT evaluates with the loops on, as this does.
    model.looping_active = bool(cfg.num_loops)
    backend, _ = choose_backend(cfg.attn_backend, device, cfg.num_heads, cfg.num_kv_heads,
                                cfg.model_dim // cfg.num_heads)
    activate_backend(backend)
    model.set_attention_backend(backend)
    evaluate_artifact(cfg, model, Path(sys.argv[1]), tokens,
                      lambda prev, tgt: target_bytes(tables, prev, tgt), log=log)
    stop(finished=True)


if __name__ == "__main__":
    main()
