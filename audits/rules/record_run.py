"""RECORD_RUN: the record track's score comes from 8xH100 runs on the challenge's validation set."""

from __future__ import annotations

import math

from audits.findings import Severity
from audits.registry import FAIL, ILLEGAL, Rule, check, found, pgolf, readme, rules
from audits.submission import runs
from audits.submission.valsplit import FULL_VAL_TOKENS, VAL_TEXT_BYTES, covers

RULES = rules(
    Rule("RECORD_RUN", FAIL, "budgets",
         "Record track: the logs show the scored runs on 8xH100 and on the challenge's FineWeb "
         "validation set.",
         (pgolf("the 600 s budgets are defined on 8xH100 and the score on the challenge's validation "
                "set; only the logs can show either"),
          readme("Rules, 10 minutes on 8xH100")), level=ILLEGAL),
)

# The score's bytes below this share of the validation text: another, smaller text was scored.
MIN_TEXT_SHARE = 0.5
NON_RECORD = "Run on 8xH100, or submit to the non-record track (records/track_non_record_16mb/)."


@check("RECORD_RUN")
def record_run(sub, options):
    """What it checks: on the record track, each run the score rests on (one log per seed, as the
    headline takes them) shows 8 GPUs (its world size, pgolf's `device: NAME x8` line) on an H100,
    and scored the challenge's FineWeb validation text: the bytes its score divides by (val_loss x
    tokens / (ln 2 x val_bpb), whatever the tokenizer, CaseOps' byte sidecar included) are at least
    half of the 151 MB of the 50,000 validation documents.

    Why it matters: "10 minutes on 8xH100s" defines both budgets; a run on fewer GPUs or on a CPU
    cannot show them met, and a score on other text is not the challenge's metric. Such runs belong
    to the non-record track.

    Illegal: `world_size:1` with `device: cpu (x86_64) x1`; 20,224 validation tokens of a sample
    corpus (0.1 MB of text).

    Warned: logs that say nothing of their hardware (early records were merged so); 8 GPUs of
    another model (`NVIDIA H200`; a merged record ran on 8xH200).

    Legal: `world_size:8` and an `nvidia-smi` table of H100s; `val_tokens: 47851520` on CaseOps
    sp8192.

    Known limits: decided from what the logs print; a log that prints no token count is not judged
    on its data (VAL_SUBSET judges partial evaluations of the FineWeb split).
    """
    if not sub.record_track:
        return
    logs = sorted(runs.headline_logs(sub).values(), key=lambda log: log.rel)
    other, unknown, model = [], [], []
    for log in logs:
        hw = runs.hardware(log)
        if hw is None:
            unknown.append(log)
        elif hw.on_cpu or (hw.gpus is not None and hw.gpus != runs.RECORD_GPUS):
            other.append((log, hw))
        elif hw.device is not None and "H100" not in hw.device:
            model.append((log, hw))
    if other:
        log, hw = other[0]
        names = ", ".join(f"{log.rel} (line {hw.line})" for log, hw in other)
        yield found("RECORD_RUN", f"no 8xH100 run: {names} ran on {hw.describe()}; the record "
                    "track's 600 s budgets are on 8xH100, so they cannot be shown met",
                    file=log.rel, line=hw.line, evidence=hw.text, hint=NON_RECORD)
    elif unknown and not model and len(unknown) == len(logs):
        yield found("RECORD_RUN", f"{', '.join(log.rel for log in unknown)}: no line "
                    "shows the hardware (world size, device or nvidia-smi table)", severity=Severity.WARN,
                    file=unknown[0].rel, hint="Log the world size and the GPUs (nvidia-smi).")
    if model:
        log, hw = model[0]
        yield found("RECORD_RUN", f"{log.rel} ran on {hw.describe()} (line {hw.line}); the budgets "
                    "are on H100 SXM", severity=Severity.WARN, file=log.rel, line=hw.line,
                    evidence=hw.text, hint="Show a run of the recipe on 8xH100.")
    for log in logs:
        finding = _other_text(log)
        if finding is not None:
            yield finding
            break


def _other_text(log):
    p = log.parsed
    s, count = p.score, p.val_tokens
    if count is None or s is None or p.dataset is not None:
        return None  # a FineWeb split the log names: VAL_SUBSET judges its coverage
    if any(covers(count.value, full) for full in FULL_VAL_TOKENS.values()):
        return None
    if not (s.val_bpb > 0 and s.val_loss > 0 and math.isfinite(s.val_bpb) and math.isfinite(s.val_loss)):
        return None
    text_bytes = s.val_loss * count.value / (math.log(2) * s.val_bpb)
    if text_bytes >= MIN_TEXT_SHARE * VAL_TEXT_BYTES:
        return None
    return found("RECORD_RUN", f"{log.rel} scored {count.value:,} validation tokens standing for "
                 f"{text_bytes / 1e6:.2f} MB of text; the challenge's FineWeb validation set is "
                 f"{VAL_TEXT_BYTES / 1e6:.0f} MB (50,000 documents)", file=log.rel, line=count.line,
                 evidence=count.text, hint="Score every fineweb_val_*.bin shard of the challenge's "
                 "data, or submit to the non-record track (records/track_non_record_16mb/).")
