"""LOG_SOURCE_MISMATCH on a self-extracting entry script: its payload against the logs' hashes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import runfolders
from audits import submission
from audits.submission import codesize
from audits.context import AuditOptions
from audits.engine import audit_submission
from audits.findings import Severity
from audits.submission.unwrap import unwrap

SOURCE = runfolders.SAMPLE_SCRIPT.decode()


def test_the_shipped_forms_unwrap_to_the_code_and_its_minified_form():
    no_siblings = lambda rel: b""  # noqa: E731  (the wrappers read no sibling file)
    assert unwrap(codesize.wrap(SOURCE), "train_gpt.py", no_siblings).source == SOURCE
    assert unwrap(codesize.compact_form(SOURCE), "train_gpt.py", no_siblings).source == codesize.minify(SOURCE)


def _log_source_findings(folder: Path, script: str, logs: dict[str, bytes]):
    files = {"train_gpt.py": script, **{name: log.decode() for name, log in logs.items()}}
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    sub = submission.load(folder)
    report = audit_submission(sub, AuditOptions(only=frozenset({"LOG_SOURCE_MISMATCH"})))
    assert report.errors == []
    return report.findings


def _logs(*scripts: bytes, minified_hash: bool = True) -> dict[str, bytes]:
    return {f"train_seed{seed}.log": runfolders.run_log(seed, script, minified_hash=minified_hash).encode()
            for seed, script in zip((1, 2, 3), scripts)}


def test_plain_script_that_ran_passes(tmp_path):
    s = runfolders.SAMPLE_SCRIPT
    assert _log_source_findings(tmp_path / "f", SOURCE, _logs(s, s, s)) == []


def test_plain_script_that_did_not_run_fails_on_each_log(tmp_path):
    other = runfolders.SAMPLE_SCRIPT + b"# edited\n"
    findings = _log_source_findings(tmp_path / "f", SOURCE, _logs(other, other, other))
    assert [(f.severity, f.file, f.line) for f in findings] == [
        (Severity.FAIL, f"train_seed{i}.log", 18) for i in (1, 2, 3)]


def test_wrapper_of_the_exact_file_that_ran_passes(tmp_path):
    s = runfolders.SAMPLE_SCRIPT
    assert _log_source_findings(tmp_path / "f", codesize.wrap(SOURCE), _logs(s, s, s)) == []


def test_minified_wrapper_matches_the_minified_hash_the_trainer_logs(tmp_path):
    s = runfolders.SAMPLE_SCRIPT
    assert _log_source_findings(tmp_path / "f", codesize.compact_form(SOURCE), _logs(s, s, s)) == []


def test_minified_wrapper_of_another_file_fails(tmp_path):
    other = runfolders.SAMPLE_SCRIPT + b"x = 1\n"
    findings = _log_source_findings(tmp_path / "f", codesize.compact_form(SOURCE), _logs(other, other, other))
    assert {(f.severity, f.rule) for f in findings} == {(Severity.FAIL, "LOG_SOURCE_MISMATCH")}
    assert len(findings) == 3


def test_minified_wrapper_and_logs_without_the_minified_hash_is_one_warning(tmp_path):
    s = runfolders.SAMPLE_SCRIPT
    findings = _log_source_findings(tmp_path / "f", codesize.compact_form(SOURCE),
                                    _logs(s, s, s, minified_hash=False))
    assert len(findings) == 1
    f = findings[0]
    assert (f.severity, f.file, f.line) == (Severity.WARN, "train_seed1.log", 18)
    assert "train_seed1.log, train_seed2.log, train_seed3.log name the script that ran" in f.message
    assert f.evidence == f"code_sha256: {hashlib.sha256(s).hexdigest()}"


def test_wrapper_with_logs_of_two_different_scripts_fails(tmp_path):
    s, other = runfolders.SAMPLE_SCRIPT, runfolders.SAMPLE_SCRIPT + b"# edited\n"
    findings = _log_source_findings(tmp_path / "f", codesize.compact_form(SOURCE),
                                    _logs(s, s, other, minified_hash=False))
    assert [(f.severity, f.rule) for f in findings] == [(Severity.FAIL, "LOG_SOURCE_MISMATCH")]
    assert "the logs name 2 different scripts" in findings[0].message
