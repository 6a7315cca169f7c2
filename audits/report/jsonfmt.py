"""`--format json`: the stable, documented interface for CI and other tools (docs/audit-json.md)."""

from __future__ import annotations

import json
import math

from audits import __version__
from audits.engine import AuditReport, SubmissionReport, level_of
from audits.report import neutral
from audits.submission import runs

SCHEMA_VERSION = 2  # 2: verdict ILLEGAL / NEEDS_ACTION / PASS, findings carry their level


def _clean(value):
    """JSON has no NaN or infinity: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def submission_dict(r: SubmissionReport, strict: bool) -> dict:
    sub = r.submission
    seeds = [runs.seed_row(log) for log in sub.logs]
    # one run per seed: an ablation or a rerun of a seed is listed, not averaged in
    scored = [log.parsed.score.val_bpb for log in runs.headline_logs(sub).values()]
    return {
        "path": str(sub.root),
        "name": sub.name,
        "track": sub.track,
        "track_origin": sub.track_origin,
        "verdict": r.verdict(strict),
        "val_bpb_mean": sum(scored) / len(scored) if scored else None,
        "seeds": seeds,
        "findings": [dict(f.to_json(), level=level_of(f, strict)) for f in r.findings],
        "waived": sorted({f.rule for f in r.findings if f.waived}),
        "errors": r.errors,
        "sandbox": None if r.sandbox is None else {"level": r.sandbox.level,
                                                   "not_isolated": r.sandbox.not_isolated()},
    }


def report_dict(report: AuditReport) -> dict:
    o = report.options
    return _clean({
        "schema_version": SCHEMA_VERSION,
        "pgolf_version": __version__,
        "target_python": o.python_label,
        "target_python_origin": o.python_origin,
        "strict": o.strict,
        "waivers": dict(sorted(o.waivers.items())),
        "exit_code": report.exit_code,
        "submissions": [submission_dict(r, o.strict) for r in report.submissions],
    })


def render_json(report: AuditReport) -> str:
    return neutral.json_text(json.dumps(report_dict(report), indent=2, ensure_ascii=False)) + "\n"
