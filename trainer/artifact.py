"""From trained weights to the artifact on disk, or a refusal before anything is written.

  1. GPTQ Hessians from training batches, inside what is left of the training budget;
  2. GPTQ (round-to-nearest without Hessians), the compact container, and its compression:
     COMPRESSOR=best picks brotli-11 or lzma on a 2 MiB sample, then only that one runs in full;
  3. the size check: code + model over 16,000,000 bytes is fitted under the cap by pruning the
     least important quantized levels (`fitcap.py`), verified with the real compressor and
     logged; only when even all-zero levels would not fit does it stop, saying so;
  4. the artifact, written atomically by rank 0.
Before training, `check_floor` refuses a model that no pruning could bring under the cap.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from trainer.challenge import CAP_BYTES
from trainer.codesize import shipped_form
from trainer.distributed import broadcast_object, rank_and_world
from trainer.extras import EXTRAS
from trainer.compress import (compress_all, compress_artifact, container_sample, pack_tensors,
                              require_compressor)
from trainer.files import write_atomic
from trainer.fitcap import NothingFits, fit_to_budget
from trainer.hessians import collect_hessians, hessian_targets
from trainer.lqer import lqer_corrections
from trainer.quant import (PASSTHROUGH_MAX_NUMEL, QTensor, quantization_summary, quantize_state_dict,
                           salient_groups)



class ArtifactTooLarge(ValueError):
    """Code + compressed model over the cap at any pruning; the message says by how much."""


def calibration_seconds(cfg, train_time_ms: float) -> float:
    """How long the Hessians may read training data: what is left of MAX_WALLCLOCK_SECONDS after
    the training time counted (about GPTQ_RESERVE_SECONDS after a wallclock stop). No limit for a
    step-based run, which has no wallclock budget."""
    if cfg.max_wallclock_seconds <= 0:
        return math.inf
    return max(0.0, cfg.max_wallclock_seconds - train_time_ms / 1000.0)


def write_artifact(cfg, model: nn.Module, loader, *,
                   code: str, artifact_path: Path, calibration_seconds: float,
                   log: Callable[[str], None]) -> dict:
    """Calibrate, quantize and compress `model`, then write the artifact (rank 0); returns the
    size figures it logged (on rank 0). `loader.next_batch()` gives training batches for at most
    `calibration_seconds`; `code` is the source of the running script, counted in the total.
    Raises ArtifactTooLarge on every rank, with nothing written, when nothing fits under the cap.
    When levels were pruned to fit, the artifact before pruning is written beside it too, at
    `unpruned_path(artifact_path)`, so the caller can measure what pruning cost."""
    if EXTRAS:  # `pgolf train` checked the compressor before launching
        require_compressor(cfg.compressor)
    hessians = _calibrate(cfg, model, loader, calibration_seconds, log)
    figures: dict = {}
    error = None
    if rank_and_world()[0] == 0:  # the others wait: every rank then reads the same file
        quantized = quantize_model(cfg, model, hessians, log)
        try:
            artifact, unfitted, figures = _package(cfg, quantized, hessians, code, log)
            write_atomic(Path(artifact_path), artifact)
            if unfitted is not None:
                write_atomic(unpruned_path(artifact_path), unfitted)
            else:  # not one an earlier run in this folder left
                unpruned_path(artifact_path).unlink(missing_ok=True)
        except ArtifactTooLarge as exc:
            error = str(exc)
    error = broadcast_object(error)  # also a barrier: the artifact is on disk after it
    if error is not None:
        log(f"export:refused {error}")
        raise ArtifactTooLarge(error)
    return figures


def unpruned_path(artifact_path: Path) -> Path:
    """Where the artifact before pruning is kept until its score is measured."""
    return Path(artifact_path).with_name(f"unpruned_{Path(artifact_path).name}")


def check_floor(cfg, model: nn.Module, code: str, log: Callable[[str], None]) -> None:
    """Before training: refuse a model that cannot fit at any pruning. The floor is the artifact
    with every quantized level at zero (row scales, fp16 tensors, header) plus the code. Measured
    on the initial weights, whose small tensors (norms at one, biases at zero) compress at least
    as well as trained ones, so a floor over the cap here is over it after training too."""
    quantized = quantize_state_dict(model.state_dict(), {}, embeddings=_embeddings(model),
                                    **quantization_settings(cfg))
    zeroed = {n: dataclasses.replace(v, q=torch.zeros_like(v.q))
              if isinstance(v, QTensor) else v for n, v in quantized.items()}
    floor = len(compress_artifact(pack_tensors(zeroed), "lzma")) + len(shipped_form(code))
    if floor > CAP_BYTES:
        raise ArtifactTooLarge(f"even with every quantized weight at zero the artifact would be "
                               f"{floor:,} bytes (row scales, fp16 tensors and code), over the "
                               f"{CAP_BYTES:,}-byte cap; make the model smaller")
    log(f"export:floor {floor:,} bytes with every quantized weight at zero: the cap can be met")


def quantization_settings(cfg) -> dict:
    """The keyword arguments of `quantize_state_dict` that come from the settings."""
    groups = {"mlp": cfg.mlp_clip_sigmas, "attn": cfg.attn_clip_sigmas}
    return dict(matrix_bits=cfg.matrix_bits, embed_bits=cfg.embed_bits,
                matrix_clip_sigmas=cfg.matrix_clip_sigmas, embed_clip_sigmas=cfg.embed_clip_sigmas,
                group_clip_sigmas={g: k for g, k in groups.items() if k is not None})


def _embeddings(model: nn.Module) -> set[str]:
    return {f"{name}.weight" for name, m in model.named_modules() if isinstance(m, nn.Embedding)}


def quantize_model(cfg, model: nn.Module, hessians: dict[str, Tensor], log,
                   passthrough_max_numel: int = PASSTHROUGH_MAX_NUMEL) -> dict:
    """The quantized state dict the artifact holds: GPTQ where `hessians` has a matrix (else
    round-to-nearest), AWQ-lite's column groups and LQER's factors as the settings ask, logged.
    The causality probes quantize through here too, so they check the export's artifact; only
    they lower `passthrough_max_numel`, to quantize a tiny model's matrices."""
    t0 = time.perf_counter()
    state, embeddings = model.state_dict(), _embeddings(model)
    fine = _salient(cfg, embeddings, state, hessians, log) if cfg.awq_groups else {}
    quantized = quantize_state_dict(state, hessians, embeddings=embeddings, fine=fine,
                                    fine_bits=cfg.awq_bits, passthrough_max_numel=passthrough_max_numel,
                                    **quantization_settings(cfg))
    log(f"quantize:{len(quantized)} tensors in {time.perf_counter() - t0:.1f}s")
    log("Quantized weights:")
    for line in quantization_summary(quantized):
        log(line)
    if cfg.lqer_enabled:
        quantized.update(lqer_corrections(cfg, state, quantized, log))
    return quantized


def _salient(cfg, embeddings: set[str], state: dict[str, Tensor], hessians: dict[str, Tensor],
             log) -> dict[str, list[tuple[int, int]]]:
    """AWQ-lite's column groups (quant.salient_groups) among the matrices quantized below
    AWQ_BITS, logged."""
    below = {n: h for n, h in hessians.items()
             if (cfg.embed_bits if n in embeddings else cfg.matrix_bits) < cfg.awq_bits}
    fine = salient_groups(state, below, size=cfg.awq_group_size, count=cfg.awq_groups)
    where = ", ".join(f"{n} {a}:{b}" for n, groups in fine.items() for a, b in groups)
    none = "none (no calibrated matrix whose width AWQ_GROUP_SIZE divides)"
    log(f"awq:int{cfg.awq_bits} columns {where or none}")
    return fine


def _calibrate(cfg, model, loader, seconds: float, log) -> dict[str, Tensor]:
    if not cfg.gptq_enabled:
        log("GPTQ:disabled (GPTQ_ENABLED=0): round-to-nearest quantization")
        return {}
    if not hessian_targets(model):
        log("GPTQ:no matrix is large enough to quantize (all stay fp16): nothing to calibrate")
        return {}
    # Calibration reads training data, so it must end inside the training budget (PR #1868's
    # compliance re-run): it gets only the time left of it.
    t0 = time.perf_counter()
    hessians, batches = collect_hessians(model, loader, max_batches=cfg.gptq_calibration_batches,
                                         seconds=seconds)
    elapsed = time.perf_counter() - t0
    window = ("no wallclock budget" if math.isinf(seconds)
              else f"{seconds:.1f}s left of the training budget")
    if not hessians:
        log(f"GPTQ:no calibration batch fits in the {window}: round-to-nearest quantization")
        return {}
    log(f"GPTQ:collected {len(hessians)} Hessians in {elapsed:.1f}s ({batches} batches; {window})")
    return hessians


def _package(cfg, quantized: dict, hessians: dict[str, Tensor], code: str,
             log) -> tuple[bytes, bytes | None, dict]:
    """The artifact bytes, pruned to fit the cap when it is over, the artifact before pruning
    (None when nothing was pruned) and the size figures; ArtifactTooLarge if nothing fits."""
    container = pack_tensors(quantized)
    method = cfg.compressor if cfg.compressor != "best" else _best_method(container, log)
    t0 = time.perf_counter()
    artifact = compress_artifact(container, method)
    seconds = time.perf_counter() - t0
    log(f"compression: {method} {len(artifact):,} bytes in {seconds:.1f}s "
        f"(container {len(container):,})")
    code_raw = len(code.encode("utf-8"))
    code_compact = len(shipped_form(code))
    pruned, unpruned = 0, None
    if len(artifact) + code_compact > CAP_BYTES:
        unpruned = artifact
        artifact, pruned = _fit(quantized, hessians, method, artifact, CAP_BYTES - code_compact, log)
    log(f"Code size (uncompressed): {code_raw} bytes")
    log(f"Code size (compressed): {code_compact} bytes")
    log(f"Serialized model quantized+{method}: {len(artifact)} bytes")
    log(f"Total submission size quantized+{method} (code uncompressed): "
        f"{len(artifact) + code_raw} bytes")
    log(f"Total submission size quantized+{method}: {len(artifact) + code_compact} bytes")
    total = len(artifact) + code_compact
    if len(artifact) + code_raw > CAP_BYTES:
        log(f"export:note the literal reading (raw code) is {len(artifact) + code_raw - CAP_BYTES:,} "
            "bytes over the cap; ship the self-extracting code form (pgolf package does)")
    return artifact, unpruned, {"model_bytes": len(artifact), "method": method, "code_bytes_raw": code_raw,
                      "code_bytes_compressed": code_compact, "total_bytes": total,
                      "pruned_levels": pruned, "compress_seconds": seconds}


def _best_method(container: bytes, log) -> str:
    """For COMPRESSOR=best: the method that compresses a sample of the container smaller;
    running both in full takes minutes on a record-sized model (docs/export.md)."""
    sample = container_sample(container)
    tried = compress_all(sample)
    built = {m: len(a) for m, (a, _) in tried.items() if isinstance(a, bytes)}
    method = min(built, key=built.get)
    log(f"compression:sample {len(sample):,} of {len(container):,} container bytes: "
        + ", ".join(f"{m} {len(a):,} bytes in {sec:.1f}s" if isinstance(a, bytes) else f"{m} {a}"
                    for m, (a, sec) in tried.items()) + f" -> {method}")
    return method


def _fit(quantized: dict, hessians: dict[str, Tensor], method: str, artifact: bytes, budget: int,
         log) -> tuple[bytes, int]:
    """Prune the least important quantized levels until the model is at most `budget` bytes;
    returns the artifact and the count pruned. ArtifactTooLarge when nothing fits."""
    over = len(artifact) - budget
    log(f"export:fit the model is {len(artifact):,} bytes, {over:,} over its {budget:,}-byte share "
        "of the cap (the rest is code): pruning the least important quantized levels")
    t0 = time.perf_counter()

    def compress(q: dict) -> bytes:
        return compress_artifact(pack_tensors(q), method)

    try:
        _, fitted, pruned = fit_to_budget(quantized, hessians, budget, artifact, compress, log)
    except NothingFits as exc:
        raise ArtifactTooLarge(f"the model is {len(artifact):,} bytes, {over:,} over its "
                               f"{budget:,}-byte share of the {CAP_BYTES:,}-byte cap, and no pruning "
                               f"fits it ({exc}); nothing was written; make the model smaller") from None
    levels = sum(v.q.numel() for v in quantized.values() if isinstance(v, QTensor))
    log(f"export:fit pruned {pruned:,} of {levels:,} quantized weights to zero "
        f"({100 * pruned / levels:.3f}%): {len(artifact):,} -> {len(fitted):,} bytes in "
        f"{time.perf_counter() - t0:.1f}s")
    return fitted, pruned
