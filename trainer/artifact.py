"""From trained weights to the artifact on disk, or a refusal before anything is written.

  1. GPTQ Hessians from training batches, inside what is left of the training budget;
  2. GPTQ (round-to-nearest without Hessians), the compact container, brotli-11 and lzma;
  3. the size check: code + model over 16,000,000 bytes stops here, saying by how much and what
     to change;
  4. the artifact, written atomically by rank 0.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from trainer.codesize import compact_form
from trainer.distributed import broadcast_object, rank_and_world
from trainer.compress import (compress_all, compress_artifact, pack_tensors, require_compressor,
                              write_atomic)
from trainer.hessians import collect_hessians, hessian_targets
from trainer.quant import QTensor, level_range, quantization_summary, quantize_state_dict

CAP_BYTES = 16_000_000


class ArtifactTooLarge(ValueError):
    """Code + compressed model over the cap; the message says by how much and what to change."""


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
    Raises ArtifactTooLarge on every rank, with nothing written, when the total is over the cap."""
    require_compressor(cfg.compressor)
    hessians = _calibrate(cfg, model, loader, calibration_seconds, log)
    figures: dict = {}
    error = None
    if rank_and_world()[0] == 0:  # the others wait: every rank then reads the same file
        quantized = _quantize(cfg, model, hessians, log)
        try:
            artifact, figures = _package(cfg, quantized, code, log)
            write_atomic(Path(artifact_path), artifact)
        except ArtifactTooLarge as exc:
            error = str(exc)
    error = broadcast_object(error)  # also a barrier: the artifact is on disk after it
    if error is not None:
        log(f"export:refused {error}")
        raise ArtifactTooLarge(error)
    return figures


def _quantize(cfg, model: nn.Module, hessians: dict[str, Tensor], log) -> dict:
    embeddings = {f"{name}.weight" for name, m in model.named_modules() if isinstance(m, nn.Embedding)}
    t0 = time.perf_counter()
    quantized = quantize_state_dict(
        model.state_dict(), hessians, embeddings=embeddings, matrix_bits=cfg.matrix_bits,
        embed_bits=cfg.embed_bits, matrix_clip_sigmas=cfg.matrix_clip_sigmas,
        embed_clip_sigmas=cfg.embed_clip_sigmas)
    log(f"quantize:{len(quantized)} tensors in {time.perf_counter() - t0:.1f}s")
    log("Quantized weights:")
    for line in quantization_summary(quantized):
        log(line)
    return quantized


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


def _package(cfg, quantized: dict, code: str, log) -> tuple[bytes, dict]:
    """The artifact bytes and the size figures; ArtifactTooLarge if it would not fit."""
    container = pack_tensors(quantized)
    candidates = compress_all(container)
    built = {m: a for m, (a, _) in candidates.items() if isinstance(a, bytes)}
    log("compression: " + ", ".join(f"{m} {len(a):,} bytes in {sec:.1f}s" if isinstance(a, bytes)
                                    else f"{m} {a}" for m, (a, sec) in candidates.items())
        + f" (container {len(container):,})")
    method = min(built, key=lambda m: len(built[m])) if cfg.compressor == "best" else cfg.compressor
    artifact = built[method]
    code_raw = len(code.encode("utf-8"))
    code_compact = len(compact_form(code).encode("utf-8"))
    log(f"Code size (uncompressed): {code_raw} bytes")
    log(f"Code size (compressed): {code_compact} bytes")
    log(f"Serialized model quantized+{method}: {len(artifact)} bytes")
    log(f"Total submission size quantized+{method} (code uncompressed): "
        f"{len(artifact) + code_raw} bytes")
    log(f"Total submission size quantized+{method}: {len(artifact) + code_compact} bytes")
    total = len(artifact) + code_compact
    if total > CAP_BYTES:
        raise ArtifactTooLarge(_over_cap_advice(cfg, quantized, total, code_compact))
    if len(artifact) + code_raw > CAP_BYTES:
        log(f"export:note the literal reading (raw code) is {len(artifact) + code_raw - CAP_BYTES:,} "
            "bytes over the cap; ship the self-extracting code form (pgolf package does)")
    return artifact, {"model_bytes": len(artifact), "method": method, "code_bytes_raw": code_raw,
                      "code_bytes_compressed": code_compact, "total_bytes": total,
                      **{f"{m}_bytes": len(a) for m, a in built.items()},
                      **{f"{m}_seconds": sec for m, (_, sec) in candidates.items()}}


def _over_cap_advice(cfg, quantized: dict, total: int, code_bytes: int) -> str:
    """By how much the artifact is over, and the clip-sigma change that should bring it under.

    With SDClip the entropy of a level is about bits - log2(k) + c (04-05 record README), so
    every doubling of k saves about one bit per quantized weight. The floor is the artifact with
    every level at zero (k -> infinity): if even that is over, no clip setting can fit."""
    over = total - CAP_BYTES
    head = f"total {total:,} bytes is {over:,} over the {CAP_BYTES:,}-byte cap; nothing was written"
    zeroed = {n: QTensor(torch.zeros_like(v.q), v.scale, v.bits, v.method)
              if isinstance(v, QTensor) else v for n, v in quantized.items()}
    floor = len(compress_artifact(pack_tensors(zeroed), "lzma")) + code_bytes
    if floor > CAP_BYTES:
        return (f"{head}. No clip setting can fit: even with every quantized weight at zero it is "
                f"{floor:,} bytes (scales, fp16 tensors and code); make the model smaller")
    n_matrix = sum(v.q.numel() for v in quantized.values()
                   if isinstance(v, QTensor) and v.bits == cfg.matrix_bits)
    sigmas = cfg.matrix_clip_sigmas * 2.0 ** (8.0 * over / max(n_matrix, 1)) * 1.02
    if sigmas > level_range(cfg.matrix_bits):
        # A step wider than one standard deviation: most weights would round to zero.
        return (f"{head}. Clipping alone would need MATRIX_CLIP_SIGMAS near {sigmas:.0f}, where "
                "most weights round to zero; make the model smaller")
    return (f"{head}. Raise MATRIX_CLIP_SIGMAS from {cfg.matrix_clip_sigmas} to about "
            f"{sigmas:.2f} (or EMBED_CLIP_SIGMAS from {cfg.embed_clip_sigmas}) and rerun")
