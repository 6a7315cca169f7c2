"""The legality rules' findings in loops the interpreter does not read: native code the run
loads and Python loops over gathered arrays (audits/legality/native.py), placed and quoted."""

from __future__ import annotations

import dataclasses

from audits import legality
from audits.findings import Severity
from audits.legality import native
from audits.registry import WORDS, found
from audits.submission import runs, runsettings


def native_findings(sub, rule: str, reading: str, kind: str):
    """The rule's findings in loops the interpreter does not read (native code, gathered arrays).
    A reading whose every output feeds a channel the runs had off is a note, not a finding."""
    run = legality.analyse(sub).run
    hits = [hit for hit in native.hits(sub, run) if hit.kind == reading]
    off = _channels_off(sub) if any(hit.outputs for hit in hits) else {}
    for hit in hits:
        words = WORDS[rule][kind]
        shipped = sub.scripts.get(hit.file)
        message = words.message.format(at=f"line {hit.line}", other=f"line {hit.token_line}",
                                       language=hit.language)
        where = _silenced(hit, off)
        if where:
            message += f"; the runs had that channel off ({'; '.join(where)}), so it did not run"
        yield found(rule, message, severity=Severity.INFO if where else None,
                    file=hit.file, line=hit.line, evidence=f"{hit.line}: {hit.text}", hint=words.hint,
                    via=shipped.via(hit.line) if shipped is not None else None)


def _channels_off(sub) -> dict[str, str]:
    """What the runs show off: settings at 0 (a boost, a weight) and counters every log prints at
    0 (`word_gate=0`), by name. The runs are those whose final score submission.json claims, where
    some are: earlier runs beside them (the channel still on, before a correction) are not what
    was scored."""
    claimed = _claimed_runs(sub)
    runs_of = dataclasses.replace(sub, logs=claimed) if claimed else sub
    return {**runsettings.zero_counters(runs_of), **runsettings.turned_off(runs_of)}


def _claimed_runs(sub) -> list:
    """The completed logs whose final score is a number submission.json states (the headline or a
    seed's result, under whatever key)."""
    data = sub.claims.data if sub.claims is not None else None
    values = list(_numbers(data))
    out = []
    for log in runs.completed_logs(sub):
        score = log.parsed.score
        if score is not None and any(abs(score.val_bpb - v) <= runs.tolerance(runs.decimals_of(v), score.decimals)
                                     for v in values):
            out.append(log)
    return out


def _numbers(data, depth: int = 0):
    """The floats of a parsed JSON value, a few levels deep."""
    if isinstance(data, float):
        yield data
    elif depth < 4 and isinstance(data, dict):
        for value in data.values():
            yield from _numbers(value, depth + 1)
    elif depth < 4 and isinstance(data, list):
        for value in data[:64]:
            yield from _numbers(value, depth + 1)


def _silenced(hit, off: dict[str, str]) -> list[str]:
    """Where the runs turned off the channel of each array the reading writes (its outputs share
    a leading word with the setting or counter: `within_top_prob[i]` and `within_gate=0`), or
    nothing when some output's channel is not shown off."""
    where = []
    for output in hit.outputs:
        stem = output.split("_", 1)[0].upper()
        names = [name for name in off if name.startswith(stem + "_") and len(stem) > 2]
        if not names:
            return []
        where.append(off[names[0]])
    return list(dict.fromkeys(where))
