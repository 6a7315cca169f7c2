"""The challenge's validation split as logs print it: its token count by dataset, and the bytes of
text it stands for, which no tokenizer changes."""

from __future__ import annotations

import math

from audits.submission.logparse import Metric, ParsedLog

# The launch week's sp1024 export: 63,779,840 tokens of other text than every later export.
LAUNCH_SP1024_TOKENS = 63_779_840
# Full FineWeb validation split (first 50,000 documents, all shards) as merged logs print it, by
# dataset. Scripts truncate to a multiple of their sequence length in slightly different ways, so
# a count within TOLERANCE below these still covers the split.
FULL_VAL_TOKENS = {
    "sp1024": (62_021_632, LAUNCH_SP1024_TOKENS),
    "sp4096": (45_514_752,),
    "sp8192": (40_540_160,),
    "sp8192_caseops": (47_851_520,),
    "byte260": (151_130_112,),
}
TOLERANCE = 0.001
# The UTF-8 bytes of those 50,000 documents, whatever the tokenizer: the labelled corpus's logs
# (354 score lines with eight decimals) give 151.02-151.08 M as val_loss x tokens / (ln 2 x
# val_bpb) on sp1024, sp4096, sp8192 and CaseOps sp8192.
VAL_TEXT_BYTES = 151_078_222
# Scored lines of one log agree this closely when each is the model's own loss over the same
# bytes (a byte-level mixture's bits per byte do not come from its val_loss).
_AGREE = 0.005


def dataset_key(name: str) -> str:
    lowered = name.lower()
    vocab = lowered.split("fineweb10b_", 1)[-1].split("_", 1)[0]
    return f"{vocab}_caseops" if "caseops" in lowered else vocab


def covers(count: int, full: tuple[int, ...]) -> bool:
    return any(count >= f * (1 - TOLERANCE) for f in full)


def implied_text_bytes(log: ParsedLog) -> tuple[float, Metric] | None:
    """The bytes a log's scores divide by, val_loss x tokens / (ln 2 x val_bpb), and the line it is
    read from; None unless the log scored the whole split of a dataset whose text is known.

    Read from the model's plain evaluations (the training loop's and the diagnostic ones) where
    the log has any, at their median line; else from the scored lines, when at least two agree."""
    if log.val_tokens is None:
        return None
    count = int(log.val_tokens.value)
    key = dataset_key(str(log.dataset.value)) if log.dataset is not None else _named_by(count)
    full = FULL_VAL_TOKENS.get(key)
    if full is None or not covers(count, full):
        return None
    if key == "sp1024" and covers(count, (LAUNCH_SP1024_TOKENS,)):
        return None  # the launch week's text, whose bytes are not VAL_TEXT_BYTES
    usable = [m for m in log.metrics if m.val_bpb > 0 and m.val_loss > 0
              and math.isfinite(m.val_bpb) and math.isfinite(m.val_loss)]
    lines = [m for m in usable if m.kind in ("step_val", "diagnostic")]
    if not lines:
        lines = [m for m in usable if m.kind == "scored"]
        implied = [_bytes(m, count) for m in lines]
        if len(lines) < 2 or max(implied) > min(implied) * (1 + _AGREE):
            return None
    middle = sorted(lines, key=lambda m: _bytes(m, count))[len(lines) // 2]
    return _bytes(middle, count), middle


def _named_by(count: int) -> str | None:
    """The dataset whose whole split this count is, for a log that names no dataset."""
    return next((key for key, full in FULL_VAL_TOKENS.items()
                 if any(f * (1 - TOLERANCE) <= count <= f for f in full)), None)


def _bytes(m: Metric, count: int) -> float:
    return m.val_loss * count / (math.log(2) * m.val_bpb)
