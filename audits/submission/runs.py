"""Per-seed figures of a submission's logs, shared by the checks and the reports."""

from __future__ import annotations

import collections
import dataclasses
import re

from audits.submission import LogFile, Submission
from audits.submission.logparse import Value

_SEED_IN_NAME = re.compile(r"seed[_-]?(\d+)", re.I)
_DEVICE_COUNT = re.compile(r" x(\d+)$")  # pgolf's trainer: "device: NVIDIA H200 x4"
RECORD_GPUS = 8  # the record track's budgets are on 8xH100


def seed_of(log: LogFile) -> Value | None:
    """The run's seed: the log's own line, else the file name (`train_seed42.log`)."""
    if log.parsed.seed is not None:
        return log.parsed.seed
    m = _SEED_IN_NAME.search(log.rel)
    return Value(int(m.group(1)), 0, f"file name {log.rel}") if m else None


def completed_logs(sub: Submission) -> list[LogFile]:
    return [log for log in sub.logs if log.parsed.completed]


def by_seed(sub: Submission) -> dict[int | None, list[LogFile]]:
    groups: dict[int | None, list[LogFile]] = {}
    for log in completed_logs(sub):
        seed = seed_of(log)
        groups.setdefault(seed.value if seed else None, []).append(log)
    return groups


@dataclasses.dataclass(frozen=True)
class Hardware:
    """What a log says it ran on: the processes (GPUs) and the device, with the line saying so."""

    gpus: int | None
    device: str | None  # "NVIDIA H100 80GB HBM3", "cpu (x86_64)"
    line: int
    text: str

    @property
    def on_cpu(self) -> bool:
        return self.device is not None and self.device.lower().startswith("cpu")

    def describe(self) -> str:
        """`8 GPU(s) (NVIDIA H100 80GB HBM3)`, `1 process(es) (cpu (x86_64))`."""
        count = None if self.gpus is None else f"{self.gpus} {'process(es)' if self.on_cpu else 'GPU(s)'}"
        if count and self.device:
            return f"{count} ({self.device})"
        return count or self.device or "hardware it does not name"


def hardware(log: LogFile) -> Hardware | None:
    """The run's hardware from its own lines: the world size (`world_size:8`, the Hyperparameters
    block), pgolf's `device: NAME xN` line, else the GPUs an `nvidia-smi` table lists. None when
    the log says nothing of it."""
    p = log.parsed
    ws = p.world_size
    device = p.device.value if p.device is not None else (p.gpus[0].value if p.gpus else None)
    if ws is not None:
        return Hardware(int(ws.value), device, ws.line, ws.text)
    if p.device is not None:
        m = _DEVICE_COUNT.search(p.device.text)
        return Hardware(int(m.group(1)) if m else None, device, p.device.line, p.device.text)
    if p.gpus:  # an nvidia-smi table lists the machine's GPUs, not the ones the run used
        return Hardware(None, device, p.gpus[0].line, p.gpus[0].text)
    return None


@dataclasses.dataclass(frozen=True)
class Headline:
    """The runs a headline score averages, one per seed, and the logs left out with the reason."""

    logs: dict[int | None, LogFile]
    apart: dict[str, str]  # log -> why it is not one of the runs


def headline(sub: Submission) -> Headline:
    """Recognise the seed runs by content. A completed log of fewer GPUs than the folder's largest
    runs is another hardware's (a one-GPU try beside the 8xH100 seeds); a log whose final scored
    pass differs from the one most logs end on is an ablation, unless it shows the score claimed
    for it. Of a seed's remaining logs (reruns), the one whose score matches that seed's claim,
    else the one closest to the headline claim, else the first."""
    claims = sub.claims
    logs = completed_logs(sub)
    apart: dict[str, str] = {}
    sizes = {log.rel: hw for log in logs if (hw := hardware(log)) is not None and hw.gpus}
    scale = max((hw.gpus for hw in sizes.values()), default=None)
    for rel, hw in sizes.items():
        if hw.gpus < scale:
            apart[rel] = f"{hw.describe()} at line {hw.line}; the seed runs have {scale}"
    kept = [log for log in logs if log.rel not in apart]
    finals = collections.Counter(log.parsed.score.base for log in kept)
    common, count = finals.most_common(1)[0] if finals else (None, 0)
    if len(finals) > 1 and count >= 2 and count * 2 > len(kept):
        for log in kept:
            score = log.parsed.score
            if score.base != common and not _shows_claim(log, claims):
                apart[log.rel] = (f"final pass {score.name} at line {score.line}; the seed runs "
                                  f"end on {common}")
    chosen = {}
    for seed, group in by_seed(sub).items():
        group = [log for log in group if log.rel not in apart]
        if not group:
            continue
        target = _claim_for(claims, seed)
        if target is None:
            chosen[seed] = group[0]
        else:
            chosen[seed] = min(group, key=lambda log: abs(log.parsed.score.val_bpb - target))
    return Headline(chosen, apart)


def headline_logs(sub: Submission) -> dict[int | None, LogFile]:
    """One completed log per seed, the runs a headline score averages (see `headline`)."""
    return headline(sub).logs


def _claim_for(claims, seed) -> float | None:
    if claims is None:
        return None
    target = (claims.per_seed.get(seed) or {}).get("val_bpb")
    return claims.val_bpb if target is None else target


def _shows_claim(log: LogFile, claims) -> bool:
    target = _claim_for(claims, seed.value if (seed := seed_of(log)) else None)
    score = log.parsed.score
    return target is not None and abs(score.val_bpb - target) <= tolerance(decimals_of(target), score.decimals)


def tolerance(*decimals: int) -> float:
    """Agreement allowed between two printed figures: 1e-4, or half a unit of the coarser one."""
    return max([1e-4] + [0.5 * 10.0 ** -d for d in decimals if d > 0])


def decimals_of(value: float) -> int:
    text = repr(value)
    return len(text.split(".", 1)[1]) if "." in text and "e" not in text else 0


def unclaimed_reruns(sub: Submission) -> dict[str, LogFile]:
    """Logs of a seed that another log of the same seed stands for: that one shows the score
    submission.json claims for the seed and this one does not (an earlier attempt, a run on other
    hardware). Each maps to the log that shows the claim. Logs without a seed are never set aside:
    they may be runs of different seeds."""
    claims = sub.claims
    if claims is None:
        return {}
    apart = {}
    for seed, logs in by_seed(sub).items():
        target = (claims.per_seed.get(seed) or {}).get("val_bpb") or claims.val_bpb
        if seed is None or len(logs) < 2 or target is None:
            continue
        def shows(log):
            score = log.parsed.score
            return score is not None and abs(score.val_bpb - target) <= tolerance(decimals_of(target), score.decimals)
        claimed = [log for log in logs if shows(log)]
        if claimed:
            apart.update({log.rel: claimed[0] for log in logs if not shows(log)})
    return apart


def seed_row(log: LogFile) -> dict:
    """The JSON row of one log: each figure with the line it came from."""
    p = log.parsed
    seed = seed_of(log)
    score = p.score
    figures = {
        "seed": seed,
        "val_bpb": Value(score.val_bpb, score.line, score.text) if score else None,
        "val_loss": Value(score.val_loss, score.line, score.text) if score else None,
        "train_time_ms": p.train_time_ms,
        "eval_time_ms": p.eval_time_ms,
        "steps": Value(p.step_count, p.stop.line, p.stop.text) if p.stop else None,
        "model_bytes": p.model_bytes,
        "artifact_bytes": p.artifact_bytes,
        "code_bytes": p.code_bytes_compressed or p.code_bytes,
        "val_tokens": p.val_tokens,
    }
    row: dict = {"log": log.rel, "completed": p.completed,
                 "score_metric": score.name if score else None}
    sources = {}
    for key, value in figures.items():
        row[key] = None if value is None else value.value
        if value is not None:
            sources[key] = {"line": value.line or None, "text": value.text}
    row["sources"] = sources
    return row
