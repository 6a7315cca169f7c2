"""Read submission.json tolerantly: the real files use well over a hundred key spellings.

The reader never raises. It keeps the parsed object, a list of problems (not JSON, not an object,
missing or mistyped required keys) and the claims other checks compare with the logs: the headline
val_bpb and byte counts, and per-seed results from whichever of the common shapes the file uses.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import re

REQUIRED = ("author", "github_id", "name", "date", "val_bpb")
ALTERNATES = {
    "val_bpb": ("mean_val_bpb", "mean_bpb", "val_bpb_mean"),
    "name": ("run_name",),
    "github_id": ("github",),
}
# Per-seed field spellings seen in merged records, mapped to one name.
SEED_FIELDS = {
    "val_bpb": "val_bpb",
    "val_loss": "val_loss",
    "artifact_bytes": "artifact_bytes",
    "bytes_total": "artifact_bytes",
    "steps": "steps",
    "train_time_ms": "train_time_ms",
    "train_time_s": "train_time_s",
    "eval_time_ms": "eval_time_ms",
    "eval_time_s": "eval_time_s",
}


@dataclasses.dataclass
class Claims:
    """What submission.json says, ready to compare with the logs."""

    data: dict | None = None
    problems: list[str] = dataclasses.field(default_factory=list)
    missing: list[str] = dataclasses.field(default_factory=list)
    val_bpb: float | None = None
    val_bpb_key: str | None = None
    val_loss: float | None = None
    bytes_total: int | None = None
    bytes_code: int | None = None
    track: str | None = None
    per_seed: dict[int, dict[str, float]] = dataclasses.field(default_factory=dict)
    text: str = ""

    def line_of(self, key: str) -> int | None:
        """The first line where `"key":` appears, for evidence; None when absent."""
        m = re.search(r'"%s"\s*:' % re.escape(key), self.text)
        return self.text.count("\n", 0, m.start()) + 1 if m else None


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _seed_key(key) -> int | None:
    try:
        return int(str(key).strip())
    except ValueError:
        return None


def _date_ok(value) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.date.fromisoformat(value[:10])
    except ValueError:
        return False
    return True


def read_claims(text: str) -> Claims:
    claims = Claims(text=text)
    try:
        data = json.loads(text, parse_int=_parse_int)
    except (json.JSONDecodeError, RecursionError) as exc:
        msg = getattr(exc, "msg", "nesting too deep")
        where = f" (line {exc.lineno}, column {exc.colno})" if hasattr(exc, "lineno") else ""
        claims.problems.append(f"not valid JSON: {msg}{where}")
        return claims
    if not isinstance(data, dict):
        claims.problems.append(f"the top level is a JSON {type(data).__name__}, not an object")
        return claims
    claims.data = data
    _required(claims, data)
    claims.val_loss = _number(data.get("val_loss"))
    claims.bytes_total = _int(data.get("bytes_total"))
    claims.bytes_code = _int(data.get("bytes_code"))
    track = data.get("track")
    claims.track = track if isinstance(track, str) else None
    claims.per_seed = _per_seed(data)
    return claims


def _parse_int(digits: str) -> int | float:
    """A JSON integer; one too long for a float (or for Python's int from text, 4,300 digits) is
    read as the float it rounds to, infinity, which no claim accepts."""
    return int(digits) if len(digits) <= 300 else float(digits)


def _int(value) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


def _required(claims: Claims, data: dict) -> None:
    for key in REQUIRED:
        value = data.get(key)
        alt = next((a for a in ALTERNATES.get(key, ()) if a in data), None)
        if value is None:
            hint = f" (found '{alt}': rename it to '{key}')" if alt else ""
            claims.missing.append(key)
            claims.problems.append(f"missing '{key}'{hint}")
            if key == "val_bpb" and alt and _number(data[alt]) is not None:
                claims.val_bpb, claims.val_bpb_key = _number(data[alt]), alt
            continue
        if key == "val_bpb":
            number = _number(value)
            if number is None or not 0 < number < 20:
                claims.problems.append(f"'val_bpb' is {value!r}, not a positive number")
            else:
                claims.val_bpb, claims.val_bpb_key = number, "val_bpb"
        elif key == "date":
            if not _date_ok(value):
                claims.problems.append(f"'date' is {value!r}, not an ISO date (YYYY-MM-DD)")
        elif not isinstance(value, (str, int)) or isinstance(value, bool) or str(value).strip() == "":
            claims.problems.append(f"'{key}' is {value!r}, not a non-empty string")


def _per_seed(data: dict) -> dict[int, dict[str, float]]:
    """Per-seed claims from `seed_results`, a dict-shaped `seeds`, or parallel lists."""
    result: dict[int, dict[str, float]] = {}
    for key in ("seed_results", "seeds"):
        block = data.get(key)
        if isinstance(block, dict):
            for seed_key, fields in block.items():
                seed = _seed_key(seed_key)
                if seed is None or not isinstance(fields, dict):
                    continue
                entry = result.setdefault(seed, {})
                for name, canonical in SEED_FIELDS.items():
                    number = _number(fields.get(name))
                    if number is not None:
                        entry.setdefault(canonical, number)
    seeds = data.get("seeds")
    scores = data.get("seed_scores")
    if isinstance(seeds, list) and isinstance(scores, list) and len(seeds) == len(scores):
        for seed_value, score in zip(seeds, scores):
            seed, number = _seed_key(seed_value), _number(score)
            if seed is not None and number is not None:
                result.setdefault(seed, {}).setdefault("val_bpb", number)
    return result
