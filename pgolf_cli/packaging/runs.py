"""Read the run folders `pgolf train --out RUN_DIR` wrote, and refuse any that cannot be packaged.

A run folder holds the script that ran (`train_gpt.py`), its rank-0 log (`train.log`) and the
artifact. A run is refused when its log is missing, cut short or diverged, when the script in the
folder is not the one the log names, or when it breaks a budget of its track (the audit's own
budget checks, run on the folder: the size cap always, the 600 s budgets on the record track only).
A set of runs is refused when they ran different code or share a seed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable
from pathlib import Path

from audits import submission as submission_mod
from audits.engine import SubmissionReport
from audits.findings import Severity
from audits.submission.logparse import ParsedLog, parse_log
from pgolf_cli.packaging.request import PackageError

RUN_LOG = "train.log"
RUN_SCRIPT = "train_gpt.py"
# Rules decided by a run's own log and script: a run that breaks one cannot be packaged.
BUDGET_RULES = frozenset({"TRAIN_OVER_BUDGET", "EVAL_OVER_BUDGET", "GPTQ_CALIB_AFTER_BUDGET",
                          "ARTIFACT_OVER_CAP"})


@dataclasses.dataclass(frozen=True)
class Run:
    path: Path
    label: str  # the folder as the user named it, for messages
    log_bytes: bytes
    log: ParsedLog
    script: bytes
    seed: int
    code_sha256: str

    @property
    def log_name(self) -> str:
        """The log's name in the records folder."""
        return f"train_seed{self.seed}.log"


def load_runs(paths: Iterable[Path]) -> list[Run]:
    paths = list(paths)
    if not paths:
        raise PackageError("give at least one run folder (the RUN_DIR of `pgolf train --out RUN_DIR`)")
    runs = [load_run(Path(p)) for p in paths]
    _distinct(runs)
    _same_code(runs)
    return sorted(runs, key=lambda run: run.seed)


def load_run(path: Path) -> Run:
    label = str(path)
    if not path.exists():
        raise PackageError(f"{label}: no such folder; give the RUN_DIR of `pgolf train --out RUN_DIR`")
    if not path.is_dir():
        raise PackageError(f"{label}: not a folder; give the RUN_DIR of `pgolf train --out RUN_DIR`")
    if not any(path.iterdir()):
        raise PackageError(f"{label} is empty: no {RUN_LOG} and no {RUN_SCRIPT}; give a folder that "
                           "`pgolf train --out` wrote")
    for name in (RUN_LOG, RUN_SCRIPT):
        if not (path / name).is_file():
            raise PackageError(f"{label} has no {name}, so it is not a finished run folder of "
                               "`pgolf train`; give the RUN_DIR it wrote")
        # a link out of the run would ship a file the run did not write (any file this user reads)
        if not (path / name).resolve().is_relative_to(path.resolve()):
            raise PackageError(f"{label}/{name} links to {(path / name).resolve()}, outside the run "
                               "folder; package the run that wrote it")
    log_bytes, cut = submission_mod.read_bounded(path / RUN_LOG, submission_mod.LOG_LIMIT)
    if cut:
        raise PackageError(f"{label}/{RUN_LOG} is over {submission_mod.LOG_LIMIT // 2**20} MiB; that "
                           "is not a train log")
    script, cut = submission_mod.read_bounded(path / RUN_SCRIPT, submission_mod.SCRIPT_LIMIT)
    if cut:
        raise PackageError(f"{label}/{RUN_SCRIPT} is over {submission_mod.SCRIPT_LIMIT // 2**20} MiB; "
                           "that is not a training script")
    log = parse_log(log_bytes.decode("utf-8", errors="replace"), RUN_LOG)
    where = f"{label}/{RUN_LOG}"
    _finite(log, where)
    if not log.completed:
        raise PackageError(f"{where} ends at line {log.line_count} without a final val_bpb line: the "
                           "run crashed or the log was cut short; rerun it")
    if log.seed is None:
        raise PackageError(f"{where} has no seed line (`seed:N`); rerun with `pgolf train`")
    if log.code_sha256 is None:
        raise PackageError(f"{where} names no code_sha256, so the code that ran is unknown; rerun "
                           "with `pgolf train`, which logs it")
    if log.total_eval_time_ms is None:
        # pgolf's trainer ends every evaluation with this line: without it a phase (TTT, say)
        # crashed, and the last score in the log is not the run's.
        raise PackageError(f"{where} ends at line {log.line_count} before its evaluation finished "
                           "(no total_eval_time line): the run crashed while evaluating; rerun it")
    actual = hashlib.sha256(script).hexdigest()
    if actual != log.code_sha256.value:
        raise PackageError(f"{label}/{RUN_SCRIPT} is not the file that ran: its SHA-256 is "
                           f"{actual[:16]}..., {RUN_LOG}:{log.code_sha256.line} names "
                           f"{log.code_sha256.value[:16]}...; restore the run's own {RUN_SCRIPT}")
    for figure, what in ((log.model_bytes, "a 'Serialized model <method>: N bytes' line"),
                         (log.train_time_ms, "a training time (stopping_early or step lines)")):
        if figure is None:
            raise PackageError(f"{where} has no {what}; the submission's figures come from the log, "
                               "so rerun with `pgolf train`")
    return Run(path=path, label=label, log_bytes=log_bytes, log=log, script=script,
               seed=int(log.seed.value), code_sha256=str(log.code_sha256.value))


def _finite(log: ParsedLog, where: str) -> None:
    for step in log.steps:
        if step.train_loss is not None and not math.isfinite(step.train_loss):
            raise PackageError(f"{where}:{step.line}: train_loss is {step.train_loss} at step "
                               f"{step.step}; a diverged run cannot be packaged")
    for metric in log.metrics:
        if not (math.isfinite(metric.val_loss) and math.isfinite(metric.val_bpb)):
            raise PackageError(f"{where}:{metric.line}: {metric.name} is not a number "
                               f"({metric.text.strip()}); a diverged run cannot be packaged")


def refuse_over_budget(report: SubmissionReport, runs: list[Run]) -> None:
    """Refuse runs that break a budget, with the audit's own finding (on the staged folder, whose
    logs are the runs') as the reason."""
    label = {run.log_name: run.label for run in runs}
    for finding in report.findings:
        if finding.rule in BUDGET_RULES and finding.severity == Severity.FAIL:
            who = label.get(finding.file or "", "the packaged folder")
            raise PackageError(f"{who}: {finding.rule}: {finding.message} ({finding.location()}); only "
                               "runs within the budgets can be packaged")


def _distinct(runs: list[Run]) -> None:
    seen: dict[Path, Run] = {}
    by_seed: dict[int, Run] = {}
    for run in runs:
        key = run.path.resolve()
        if key in seen:
            raise PackageError(f"{run.label} is given twice (also as {seen[key].label}); give each "
                               "run folder once")
        seen[key] = run
        if run.seed in by_seed:
            raise PackageError(f"{by_seed[run.seed].label} and {run.label} both ran seed {run.seed}; "
                               "each run of a submission needs its own seed")
        by_seed[run.seed] = run


def _same_code(runs: list[Run]) -> None:
    first = runs[0]
    for run in runs[1:]:
        if run.code_sha256 != first.code_sha256:
            raise PackageError(f"{run.label} ran different code from {first.label}: its log names "
                               f"train_gpt.py {run.code_sha256[:16]}..., {first.label}'s names "
                               f"{first.code_sha256[:16]}...; package runs of one train_gpt.py")
