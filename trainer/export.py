"""The run loop's last phase: write the artifact, then evaluate it (`artifact.py`, `scoring.py`);
and, before training, the check that the model can fit the cap at all.

Called once the EMA weights are in the model and the pre-quantization score is logged. What can
go wrong here with good code (a model over the cap, an unreadable artifact, a validation set
shorter than one window, a missing compressor) becomes a TrainerError, which the entry point
prints as one line (exit status 2); nothing is half-written.
"""

from __future__ import annotations

import sys
from pathlib import Path

from torch import nn

from trainer.artifact import (ArtifactTooLarge, calibration_seconds, check_floor,
                              unpruned_path, write_artifact)
from trainer.codesize import read_source
from trainer.compress import ArtifactError, CompressorUnavailable
from trainer.errors import TrainerError
from trainer.extras import EXTRAS
from trainer.runlog import log
from trainer.runtime import Run
from trainer.scoring import evaluate_artifact, pruning_cost
from trainer.sliding import ValidationTooShort, check_length

ARTIFACT_NAME = "final_model.pga"
EXPORT_ERRORS = (ArtifactTooLarge, ArtifactError, CompressorUnavailable, ValidationTooShort)


def export_and_evaluate(run: Run, model: nn.Module, train_time_ms: float) -> dict:
    """Quantize `model` into OUT_DIR/final_model.pga and evaluate that file; returns the figures.

    `train_time_ms` is the training time counted at the stop: calibration gets what is left of
    MAX_WALLCLOCK_SECONDS. The model's weights end as the artifact's, adapted by TTT."""
    cfg = run.cfg
    path = run.out_dir / ARTIFACT_NAME
    tokens = run.val.tokens.to(run.device).long()
    bytes_of = run.val.bytes_of

    try:
        check_length(tokens.numel(), cfg.eval_seq_len)
        loader = run.train_loader()
        try:
            figures = write_artifact(cfg, model, loader, code=_running_code(run.code_path),
                                     artifact_path=path,
                                     calibration_seconds=calibration_seconds(cfg, train_time_ms),
                                     log=log)
        finally:
            loader.close()
        figures.update(evaluate_artifact(cfg, model, path, tokens, bytes_of, log=log))
        unpruned = unpruned_path(path)
        if unpruned.exists():  # levels were pruned to fit the cap: what did it cost?
            figures["pruning_cost_bpb"] = pruning_cost(cfg, model, unpruned, tokens, bytes_of,
                                                       figures["quantized"]["val_bpb"], log=log)
    except EXPORT_ERRORS as exc:
        raise TrainerError(str(exc)) from None
    return figures


def check_cap_before_training(cfg, model: nn.Module, code_path: Path | None) -> None:
    """Stop before training (a TrainerError) when no pruning could fit the model under the cap."""
    try:
        check_floor(cfg, model, _running_code(code_path), log)
    except ArtifactTooLarge as exc:
        raise TrainerError(str(exc)) from None


def _running_code(code_path: Path | None) -> str:
    """The source counted in the artifact: the running train_gpt.py; from the package (no
    bundle), the trainer modules this process loaded, which is what a bundle would hold."""
    if code_path is not None or not EXTRAS:  # a bundle always has its file
        return read_source(code_path.read_bytes())
    files = sorted({m.__file__ for name, m in sys.modules.items()
                    if name.startswith("trainer.") and getattr(m, "__file__", None)})
    log(f"code: counted from the {len(files)} trainer modules loaded (running the package, "
        "not a bundled train_gpt.py)")
    return "\n".join(Path(f).read_text(encoding="utf-8") for f in files)
