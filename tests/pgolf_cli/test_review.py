"""`pgolf review`: the audit as a deterministic Markdown review comment."""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import SANDBOXES

import runfolders
from audits import __version__, submission
from audits.compliance import rule_results, unchecked_lines
from audits.context import AuditOptions
from audits.engine import AuditReport, SubmissionReport
from audits.registry import found
from audits.report.review import render_review
from pgolf_cli.main import cli
from pgolf_cli.packaging import PackageRequest, package


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("review")
    runs = runfolders.write_runs(tmp / "runs")
    return package(PackageRequest(runs=tuple(runs), name="Legal TTT", author="Ada", github_id="ada", track="10min_16mb",
                                  out=tmp / "records", date=datetime.date(2026, 4, 9))).folder


def review(path, *args) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["review", str(path), *args])
    assert result.stderr == ""
    return result.exit_code, result.stdout


def copy_of(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "records" / "track_10min_16mb" / folder.name
    shutil.copytree(folder, target)
    return target


def test_review_of_a_clean_folder(folder):
    code, text = review(folder)
    assert code == 0
    first = text.splitlines()[0]
    best = next(iter(SANDBOXES.values())).weaker()  # a level short of the full one is named
    assert first == ("**pgolf review: PASS** for `2026-04-09_Legal_TTT`: 0 FAIL, 0 WARN, 3 INFO."
                     + (f" Smoke import in a weaker {best}." if best else ""))
    assert "**Score:** **1.07628** ± 0.00044 (std) over 3 seed run(s)" in text
    assert "submission.json claims **1.07628103**" in text
    assert "C1 pass · C2 pass · C3 pass · C4 pass" in text
    assert "**Significance:** significant: mean 1.07628 vs baseline 1.08220" in text
    assert "| #1017 C3 score before update |" in text  # in the folded part
    assert "**Smoke test:** passed: imported" in text and "SMOKE_TEST_PASS" not in text
    # The causality probe is checked by this version, when asked for: not "not checked by" it.
    assert "Not run (option off): `EVAL_CAUSALITY_PROBE` (`pgolf audit --probe`)." in text
    assert "EVAL_CAUSALITY_PROBE" not in next((line for line in text.splitlines()
                                               if line.startswith("Not checked by")), "")
    assert text.rstrip().endswith(f"<sub>pgolf {__version__} · Python target 3.10 (default: the "
                                  "community reviewers' CPU smoke box runs Python 3.10; no organizer rule "
                                  "pins a version (openai/parameter-golf#17, #1591)) · `pgolf review` output "
                                  "is deterministic: rerun it to diff.</sub>")


@pytest.mark.slow
def test_review_is_the_same_bytes_wherever_and_whenever_it_runs(folder, tmp_path):
    _, here = review(folder)
    _, again = review(folder)
    _, elsewhere = review(copy_of(folder, tmp_path))
    assert here == again == elsewhere
    assert str(tmp_path) not in elsewhere and str(folder.parent) not in here


def test_review_names_the_line_of_an_over_budget_log(folder, tmp_path):
    planted = copy_of(folder, tmp_path)
    log = planted / "train_seed314.log"
    lines = log.read_text().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if line.startswith("stopping_early:"))
    lines[number - 1] = lines[number - 1].replace("train_time:592054ms", "train_time:612054ms")
    log.write_text("".join(lines))
    code, text = review(planted)
    assert code == 1
    assert text.startswith("**pgolf review: ILLEGAL**")
    assert f"- **FAIL** `TRAIN_OVER_BUDGET` at `train_seed314.log:{number}`" in text
    assert f"  {number} | stopping_early: wallclock_cap train_time:612054ms step:4550/20000" in text
    assert f"#### FAIL `TRAIN_OVER_BUDGET` at `train_seed314.log:{number}`" in text
    assert f"> {number} | stopping_early: wallclock_cap train_time:612054ms step:4550/20000" in text
    assert "training took 612.1 s, over the 600 s budget" in text


def test_review_names_the_line_of_a_submission_json_mismatch(folder, tmp_path):
    planted = copy_of(folder, tmp_path)
    data = json.loads((planted / "submission.json").read_text())
    data["val_bpb"] = 1.0700
    text = json.dumps(data, indent=2)
    (planted / "submission.json").write_text(text)
    number = text.splitlines().index('  "val_bpb": 1.07,') + 1
    code, text = review(planted)
    assert code == 1
    assert f"#### FAIL `SUBMISSION_JSON_MISMATCH` at `submission.json:{number}`" in text
    assert f'> {number} |   "val_bpb": 1.07,' in text
    assert "submission.json claims **1.07**" in text
    assert "no scored line of the logs shows the claimed score" in text


def test_smoke_line_comes_from_the_smoke_finding(folder):
    sub = submission.load(folder)
    fail = found("IMPORT_FAIL", "train_gpt.py: NameError: name 'flash_attn_varlen_func' is not defined",
                 file="train_gpt.py", line=2)
    options = AuditOptions()
    text = render_review(AuditReport(options, [SubmissionReport(sub, [fail], [])]))
    assert ("**Smoke test:** FAIL `IMPORT_FAIL`: train_gpt.py: NameError: name "
            "'flash_attn_varlen_func' is not defined.") in text


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_review_of_a_pr_branch_names_repository_paths(folder, tmp_path):
    repo = tmp_path / "parameter-golf"
    (repo / "records" / "track_10min_16mb").mkdir(parents=True)
    (repo / "README.md").write_text("# parameter-golf\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "submission")
    copy = shutil.copytree(folder, repo / "records" / "track_10min_16mb" / folder.name)
    claims = json.loads((copy / "submission.json").read_text())
    claims["val_bpb"] = 1.07  # a planted mismatch, to see where its location points
    (copy / "submission.json").write_text(json.dumps(claims, indent=2))
    (repo / "README.md").write_text("# parameter-golf, edited by the PR\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "submission")
    code, text = review(repo, "--base", "main")
    assert code == 1
    assert text.startswith(f"**pgolf review: NEEDS_ACTION** for `records/track_10min_16mb/{folder.name}`")
    assert "#### FAIL `LAYOUT_NOT_SINGLE_FOLDER` at `README.md`" in text
    assert f"at `records/track_10min_16mb/{folder.name}/submission.json:" in text


def test_a_rule_whose_option_was_on_but_not_decided_is_not_called_off():
    results = {"EVAL_CAUSALITY_PROBE": "not checked", "VAL_SUBSET": "pass"}
    assert unchecked_lines(results, AuditOptions(), version="this version") == [
        "Not run (option off): `EVAL_CAUSALITY_PROBE` (`pgolf audit --probe`)."]
    assert unchecked_lines(results, AuditOptions(probe=True), version="this version") == [
        "Not checked by this version: `EVAL_CAUSALITY_PROBE`."]


def test_smoke_rules_are_not_passed_when_the_smoke_import_is_off(folder):
    """No import ran, so IMPORT_FAIL cannot pass; it was reported as a pass before."""
    report = SubmissionReport(submission.load(folder), [], [])
    for smoke, status in ((False, "not checked"), (True, "pass")):
        results = rule_results(report, AuditOptions(smoke=smoke))
        assert results["IMPORT_FAIL"] == results["IMPORT_STUB_LIMIT"] == status
    lines = unchecked_lines(rule_results(report, AuditOptions()), AuditOptions(), version="v")
    assert "`IMPORT_FAIL` (`pgolf audit --smoke`)" in lines[-1]


def _top(text: str) -> list[str]:
    """The lines of a review before its folded part."""
    return text.split("<details>", 1)[0].rstrip("\n").splitlines()


REDUCED = Path(__file__).parents[1] / "fixtures" / "corpus_reduced"


@pytest.mark.parametrize("name", sorted(p.name for p in REDUCED.iterdir() if p.is_dir()))
def test_every_review_of_the_reduced_corpus_fits_a_pr_page(name):
    from audits import api
    from audits.submission.gitdiff import parse_changes
    changes = REDUCED / f"{name}.changes"
    changed = tuple(parse_changes(changes.read_text(encoding="utf-8"), str(changes))) if changes.is_file() else None
    report = api.audit([str(REDUCED / name)], AuditOptions(changed_files=changed))
    text = render_review(report)
    top = _top(text)
    assert len(top) <= 30, "\n".join(top)
    assert text.count("<details>") == text.count("</details>") == 1
    verdict = report.submissions[0].verdict()
    assert top[0].startswith(f"**pgolf review: {verdict}**")
    blocking = {f.rule for f in report.submissions[0].findings if f.severity.name == "FAIL"}
    for rule in blocking:  # every blocking cause is named before the fold, or counted there
        assert f"`{rule}`" in "\n".join(top) or "more cause(s) in the details below" in top[-1]


def test_a_blocking_legality_finding_links_its_ruling():
    from audits import api
    report = api.audit([str(REDUCED / "ngram_target_in_key")], AuditOptions())
    top = "\n".join(_top(render_review(report)))
    assert "[issue #1017](https://github.com/openai/parameter-golf/issues/1017)" in top
    assert "[PR #779](https://github.com/openai/parameter-golf/pull/779)" in top


def test_review_formats_and_python_target(folder):
    code, text = review(folder, "--format", "json", "--no-smoke")
    data = json.loads(text)
    assert code == 0 and data["submissions"][0]["verdict"] == "PASS"
    code, text = review(folder, "--format", "text", "--no-smoke", "--python", "3.12")
    assert code == 0 and "PASS" in text
    _, text = review(folder, "--no-smoke", "--python", "3.12")
    assert "Python target 3.12 (--python)" in text
