"""`pgolf package` as a library: seed runs in, an audited records folder out.

    from pgolf_cli.packaging import PackageRequest, package
    result = package(PackageRequest(runs=(Path("runs/s42"), Path("runs/s314"), Path("runs/s999")),
                                    name="SP8192 legal TTT", author="Ada", github_id="ada"))
    result.folder, result.failed, result.pr_title

Inputs are checked before anything is written (PackageError: one line, nothing on disk). The
folder is built in a staging directory and audited there once, as the folder it will be at the
target: a run over a budget is refused from that audit, the compliance block and section come from
it, and once the folder is renamed into place it is the result (the folder's bytes do not change
in the rename). A folder whose audit fails is kept and reported as failing.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from audits import __version__
from audits.compliance import condition_results, rule_results
from audits.context import AuditOptions, Baseline
from audits.engine import AuditReport, SubmissionReport, audit_submission, level_of
from audits.findings import Severity
from audits.registry import PASS
from audits.submission import load
from pgolf_cli.packaging import code as code_mod
from pgolf_cli.packaging import readme, submission_json
from pgolf_cli.packaging.folder import check_target, commit, staged
from pgolf_cli.packaging.plot import PLOT_NAME, loss_curves_png, require_matplotlib
from pgolf_cli.packaging.request import AUTO, PackageError, PackageRequest, validate
from pgolf_cli.packaging.runs import Run, load_runs, refuse_over_budget

__all__ = ["PackageError", "PackageRequest", "PackageResult", "package"]


@dataclasses.dataclass(frozen=True)
class PackageResult:
    folder: Path
    report: AuditReport  # the audit of the folder where it now lies
    submission: dict  # submission.json as written
    pr_title: str
    pr_body: str
    explanations: dict[str, str]  # rule -> why its WARN is expected, for the rules that warned
    track_reason: str | None = None  # why the runs went to the non-record track, when chosen so

    @property
    def failed(self) -> bool:
        return self.report.exit_code != 0


# The rules only a record must pass: runs that break one go to the non-record track.
RECORD_RULES = frozenset({"RECORD_RUN", "TRAIN_OVER_BUDGET", "EVAL_OVER_BUDGET",
                          "GPTQ_CALIB_AFTER_BUDGET", "NOT_SIGNIFICANT"})


def package(request: PackageRequest) -> PackageResult:
    validate(request)
    require_matplotlib()
    runs = load_runs(request.runs)
    shipped = code_mod.ship(runs[0].script, request.code_form)
    reason = None
    if request.track == AUTO:
        track, reason = choose_track(request, runs, shipped)
        request = dataclasses.replace(request, track=track)
    target = request.target
    check_target(target, request.force)
    options = audit_options(request)
    with staged(target) as folder:
        _write_static(folder, runs, shipped)
        data = submission_json.build(request, runs, shipped, compliance=None)
        _write(folder / "submission.json", submission_json.dumps(data))
        _write(folder / "README.md", f"# {request.name.strip()}\n")  # rewritten once audited
        report = audit_submission(load(folder, placed_at=target), options)
        refuse_over_budget(report, runs)
        data = submission_json.build(request, runs, shipped, compliance_block(report, options))
        _write(folder / "submission.json", submission_json.dumps(data))
        _write(folder / "README.md", readme.render(request, runs, shipped, data, report, options))
        commit(folder, target, request.force)
    report.submission.root = target.resolve()
    final = AuditReport(options, [report])
    warned = sorted({f.rule for f in report.findings if f.severity == Severity.WARN})
    return PackageResult(folder=target, report=final, submission=data,
                         pr_title=readme.pr_title(request, data),
                         pr_body=readme.pr_body(request, runs, data, report, options),
                         explanations={r: why for r in warned
                                       if (why := readme.explain(r, runs, shipped)) is not None},
                         track_reason=reason)


def choose_track(request: PackageRequest, runs: list[Run], shipped) -> tuple[str, str | None]:
    """The record track when the folder, audited there by the rules only a record must pass,
    passes them; else the non-record track and the first finding that says why."""
    record = dataclasses.replace(request, track="10min_16mb")
    options = dataclasses.replace(audit_options(record), only=RECORD_RULES)
    with tempfile.TemporaryDirectory(prefix="pgolf-track-") as tmp:
        folder = Path(tmp) / record.target.name
        folder.mkdir()
        _write_static(folder, runs, shipped)
        _write(folder / "submission.json",
               submission_json.dumps(submission_json.build(record, runs, shipped, compliance=None)))
        report = audit_submission(load(folder, placed_at=record.target), options)
    blocking = [f for f in report.findings if level_of(f) != PASS]
    if not blocking:
        return "10min_16mb", None
    first = blocking[0]
    return "non_record_16mb", f"{first.rule}: {first.message}"


def audit_options(request: PackageRequest) -> AuditOptions:
    baseline = None
    if request.baseline_bpb:
        values = ",".join(f"{v:g}" for v in request.baseline_bpb)
        baseline = Baseline(tuple(request.baseline_bpb), f"--baseline-bpb {values}")
    return AuditOptions(baseline=baseline)


def compliance_block(report: SubmissionReport, options: AuditOptions) -> dict:
    """submission.json's `compliance`: the audit's verdicts, never the author's claims."""
    results = rule_results(report, options)
    return {
        "checked_by": f"pgolf {__version__}",
        "python_target": options.python_label,
        "verdict": report.verdict(options.strict),
        "conditions": {c.condition: c.status for c in condition_results(results)},
        "rules": results,
    }


def _write_static(folder: Path, runs: list[Run], shipped: code_mod.ShippedCode) -> None:
    (folder / "train_gpt.py").write_bytes(shipped.data)
    for run in runs:
        (folder / run.log_name).write_bytes(run.log_bytes)
    torch = runs[0].log.torch_version
    _write(folder / "requirements.txt",
           code_mod.requirements_txt(shipped.source, torch.value if torch else None))
    (folder / PLOT_NAME).write_bytes(loss_curves_png(runs))


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
