"""Evaluate an artifact again, every phase the settings enable, on one or several GPUs.

    torchrun --standalone --nproc_per_node=N -m benchmarks.eval_artifact ARTIFACT

Settings come from the environment as for a run (DATA_DIR, PRESET, SLIDING_WINDOW_ENABLED,
TTT_ENABLED...). It rebuilds the model from the settings, loads the artifact and runs the run
loop's own evaluation (`trainer.scoring.evaluate_artifact`): the phases' figures and times are
printed in the run log's lines. For re-measuring evaluation without training again.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainer.config import load_config
from trainer.distributed import dist_from_env, start, stop
from trainer.evaluate import load_validation
from trainer.main import pick_device
from trainer.model import build_model
from trainer.preflight import preflight
from trainer.scoring import evaluate_artifact


def main() -> None:
    cfg = load_config()
    dist = dist_from_env()
    data = preflight(cfg)
    device = pick_device(dist)
    start(dist, device)
    log = print if dist.is_main else (lambda _line: None)
    val = load_validation(cfg, data.val, data.tokenizer, device)
    model, _ = build_model(cfg, device)
    # A run that trained past ENABLE_LOOPING_AT evaluates with the loops on, as this does.
    model.looping_active = bool(cfg.num_loops)
    evaluate_artifact(cfg, model, Path(sys.argv[1]), val.tokens.to(device).long(),
                      val.bytes_of, log=log)
    stop(finished=True)


if __name__ == "__main__":
    main()
