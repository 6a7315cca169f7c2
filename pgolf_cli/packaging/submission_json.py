"""submission.json computed from the logs, with the source of every figure beside it.

Every number is read from a log line, or computed from such numbers and the shipped file's size;
`sources` says which line (`train_seed42.log:62`) or which computation, so a reviewer (and the
tests) can trace each one. Byte counts:

- `bytes_code` is the size of the shipped `train_gpt.py`, the file in the folder: for
  `--code-form wrapped` the self-extracting form, for `plain` the file that ran.
- `seed_results.<seed>.model_bytes` is the log's `Serialized model <method>: N bytes` line.
- `bytes_total` is the largest, over seeds, of `model_bytes + bytes_code`: what the folder's
  artifact weighs on its worst seed, the number the 16,000,000-byte cap applies to.
- `seed_results.<seed>.artifact_bytes` is the log's own `Total submission size` line, as the run
  counted it; it equals `model_bytes + bytes_code` when the run counted its code the way the
  folder ships it, and is kept as logged either way so the audit can compare it with the log.
"""

from __future__ import annotations

import json
import math

from audits.stats import mean, sample_var
from audits.submission.logparse import ParsedLog, Value
from pgolf_cli.packaging.code import ShippedCode
from pgolf_cli.packaging.request import PackageRequest
from pgolf_cli.packaging.runs import Run


def build(request: PackageRequest, runs: list[Run], code: ShippedCode,
          compliance: dict | None) -> dict:
    sources: dict[str, str] = {}
    seed_results = {}
    for run in runs:
        row, row_sources = _seed_row(run)
        seed_results[str(run.seed)] = row
        sources.update({f"seed_results.{run.seed}.{k}": v for k, v in row_sources.items()})
    bpbs = [row["val_bpb"] for row in seed_results.values()]
    losses = [row["val_loss"] for row in seed_results.values()]
    bytes_code = len(code.data)
    data: dict = {
        "author": request.author.strip(),
        "github_id": request.github_id.strip(),
        "name": request.name.strip(),
        "date": request.folder_date.isoformat(),
        "track": request.track,
        "val_bpb": round(mean(bpbs), 8),
    }
    sources["val_bpb"] = "mean of seed_results.*.val_bpb"
    if len(runs) > 1:
        data["val_bpb_std"] = round(math.sqrt(sample_var(bpbs)), 8)
        sources["val_bpb_std"] = "sample standard deviation of seed_results.*.val_bpb"
    data["val_loss"] = round(mean(losses), 8)
    sources["val_loss"] = "mean of seed_results.*.val_loss"
    if len(runs) > 1:
        data["val_loss_std"] = round(math.sqrt(sample_var(losses)), 8)
        sources["val_loss_std"] = "sample standard deviation of seed_results.*.val_loss"
    data["bytes_total"] = max(row["model_bytes"] for row in seed_results.values()) + bytes_code
    sources["bytes_total"] = "max over seeds of seed_results.*.model_bytes + bytes_code"
    data["bytes_code"] = bytes_code
    sources["bytes_code"] = _code_source(runs, bytes_code)
    data["code_form"] = code.form
    data["code_sha256"] = runs[0].code_sha256
    sources["code_sha256"] = ", ".join(f"{r.log_name}:{r.log.code_sha256.line}" for r in runs)
    data["seeds"] = [run.seed for run in runs]
    sources["seeds"] = ", ".join(f"{r.log_name}:{r.log.seed.line}" for r in runs)
    data["seed_results"] = seed_results
    for key, pick in (("hardware", _hardware), ("python_version", lambda p: p.python_version),
                      ("pytorch_version", lambda p: p.torch_version)):
        value, source = _common(runs, pick)
        if value is not None:
            data[key] = value
            sources[key] = source
    if compliance is not None:
        data["compliance"] = compliance
    data["sources"] = sources
    return data


def dumps(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _number(value: float | int):
    value = round(float(value), 3)  # seconds x 1000 can carry float noise: 64100.00000000001
    return int(value) if value.is_integer() else value


def _seed_row(run: Run) -> tuple[dict, dict[str, str]]:
    p, name = run.log, run.log_name
    score = p.score
    figures: dict[str, tuple[float | int, str]] = {
        "val_bpb": (score.val_bpb, f"{name}:{score.line}"),
        "val_loss": (score.val_loss, f"{name}:{score.line}"),
    }
    if p.artifact_bytes is not None:
        figures["artifact_bytes"] = (p.artifact_bytes.value, f"{name}:{p.artifact_bytes.line}")
    figures["model_bytes"] = (p.model_bytes.value, f"{name}:{p.model_bytes.line}")
    figures["train_time_ms"] = (_number(p.train_time_ms.value), f"{name}:{p.train_time_ms.line}")
    figures["eval_time_ms"] = (_number(p.eval_time_ms.value), _eval_source(p, name))
    steps_line = p.stop.line if p.stop is not None else p.steps[-1].line
    figures["steps"] = (p.step_count, f"{name}:{steps_line}")
    row = {"log": name, **{k: v for k, (v, _) in figures.items()}}
    return row, {k: s for k, (_, s) in figures.items()}


def _eval_source(p: ParsedLog, name: str) -> str:
    if p.total_eval_time_ms is not None:
        return f"{name}:{p.total_eval_time_ms.line}"
    return "sum of " + " + ".join(f"{name}:{m.line}" for m in p.eval_phases)


def _code_source(runs: list[Run], bytes_code: int) -> str:
    """The shipped file's size; and the log line that printed the same size, when one did."""
    p = runs[0].log
    for value in (p.code_bytes_compressed, p.code_bytes_uncompressed, p.code_bytes):
        if value is not None and value.value == bytes_code:
            return f"train_gpt.py as shipped; the same size as {runs[0].log_name}:{value.line}"
    return "train_gpt.py as shipped"


def _hardware(p: ParsedLog) -> Value | None:
    if not p.gpus and p.device is not None:  # pgolf's own `device: NAME xN` line
        count = p.world_size.value if p.world_size is not None else 1
        return Value(f"{count}x {p.device.value}", p.device.line, p.device.text)
    if not p.gpus:
        return None
    names = sorted({str(g.value) for g in p.gpus})
    return Value(f"{len(p.gpus)}x {' + '.join(names)}", p.gpus[0].line, p.gpus[0].text)


def _common(runs: list[Run], pick) -> tuple[object, str]:
    """One value when every log agrees, else a per-seed mapping; with the lines it came from."""
    values = {run.seed: pick(run.log) for run in runs}
    if any(v is None for v in values.values()):
        return None, ""
    source = ", ".join(f"{r.log_name}:{values[r.seed].line}" for r in runs)
    distinct = {v.value for v in values.values()}
    if len(distinct) == 1:
        return distinct.pop(), source
    return {str(seed): v.value for seed, v in values.items()}, source
