"""Per-seed figures of a submission's logs, shared by the checks and the reports."""

from __future__ import annotations

import re

from audits.submission import LogFile, Submission
from audits.submission.logparse import Value

_SEED_IN_NAME = re.compile(r"seed[_-]?(\d+)", re.I)


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


def headline_logs(sub: Submission) -> dict[int | None, LogFile]:
    """One completed log per seed, the runs a headline score averages. When a seed has several
    (reruns, ablations), the one whose score matches that seed's claim, else the one closest to
    the headline claim, else the first."""
    claims = sub.claims
    chosen = {}
    for seed, logs in by_seed(sub).items():
        target = (claims.per_seed.get(seed) or {}).get("val_bpb") if claims else None
        if target is None and claims is not None:
            target = claims.val_bpb
        if target is None:
            chosen[seed] = logs[0]
        else:
            chosen[seed] = min(logs, key=lambda log: abs(log.parsed.score.val_bpb - target))
    return chosen


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
