"""Legitimate shapes import; failures are classified and mapped to the script's lines. These run
in the best sandbox this machine has (the sandbox tests cover every level)."""

from __future__ import annotations

import os
import platform
import sys

import pytest

from audits import api
from audits.context import AuditOptions
from audits.findings import Severity
from audits.rules import smoke as smoke_checks
from audits.rules.smoke import smoke_import
from audits.smoke import isolation
from audits.smoke.run import Limits

OPTIONS = AuditOptions(smoke=True)
QUICK = Limits(wall_s=60, cpu_s=60)


def smoke(sub, options=OPTIONS, **kwargs):
    return smoke_import(sub, options, limits=QUICK, **kwargs)


def only_finding(result):
    assert len(result.findings) == 1, [f.message for f in result.findings]
    return result.findings[0]


@pytest.mark.parametrize("fixture", ["sibling_import", "flash_attn_import", "triton_kernels", "custom_op",
                                     "torch_compile", "cuda_only_packages", "declared_latin1"])
def test_legitimate_shapes_import(fixture, smoke_folder):
    result = smoke(smoke_folder(fixture))
    finding = only_finding(result)
    assert result.outcome == "pass", result.error
    assert finding.rule == "IMPORT_FAIL" and finding.severity == Severity.INFO
    assert finding.message.startswith("SMOKE_TEST_PASS: imported")
    assert finding.evidence.startswith("imported in ")
    assert f"[sandbox: {result.sandbox.level}" in finding.message
    assert result.sandbox.describe() in finding.evidence


def test_flash_attn_interface_is_served_by_a_stub(smoke_folder):
    result = smoke(smoke_folder("flash_attn_import"))
    assert {"flash_attn_interface", "flash_attn"} <= set(result.stubbed)
    assert "stubbed: flash_attn, flash_attn_interface" in result.findings[0].evidence


def test_a_custom_op_registers_again_in_each_fresh_process(smoke_folder):
    sub = smoke_folder("custom_op")
    assert [smoke(sub).outcome, smoke(sub).outcome] == ["pass", "pass"]


def test_record_shaped_script_reports_dimensions_and_code_bytes(smoke_folder):
    sub = smoke_folder("record")
    result = smoke(sub)
    assert result.dims == {"layers": 11, "width": 512, "vocab": 1024, "from": "Hyperparameters"}
    message = only_finding(result).message
    assert "layers 11, width 512, vocab 1024 (from Hyperparameters)" in message
    assert f"code {len((sub.root / 'train_gpt.py').read_bytes()):,} bytes" in message


def test_smoke_forward_runs_a_tiny_model(smoke_folder):
    result = smoke(smoke_folder("record"), AuditOptions(smoke=True, smoke_forward=True))
    assert result.forward["ok"], result.forward
    assert "GPT with num_layers=2, model_dim=64, vocab_size=128 ran a forward pass" in result.forward["detail"]
    assert "forward: GPT with" in only_finding(result).evidence


def test_smoke_forward_failure_is_reported_not_failed(smoke_folder):
    result = smoke(smoke_folder("sibling_import"), AuditOptions(smoke=True, smoke_forward=True))
    assert result.forward == {"ok": False, "detail": "no nn.Module class named GPT"}
    assert only_finding(result).severity == Severity.INFO


def test_a_script_without_main_guard_is_reported_and_never_run(smoke_folder, listener):
    port, accepted = listener
    # Even in the weakest sandbox, where it could reach the listener, nothing runs.
    result = smoke(smoke_folder("no_main_guard", port=port), sandbox=isolation.sandboxes()["none"])
    assert accepted() == []
    assert result.outcome == "not_imported" and result.seconds is None
    finding = only_finding(result)
    assert (finding.rule, finding.severity, finding.line) == ("IMPORT_FAIL", Severity.WARN, 12)
    assert "a call of main() at the top level" in finding.message and finding.evidence == "main()"


@pytest.mark.parametrize("fixture, severity, line, text", [
    ("syntax_error", Severity.FAIL, 5, "SyntaxError: invalid syntax"),
    ("name_error", Severity.FAIL, 8, "NameError: name 'steps_per_layer' is not defined"),
    ("missing_module", Severity.FAIL, 2,
     "needs mamba_ssm_not_installed_anywhere, which is not installed and not in requirements.txt"),
    ("declared_module", Severity.WARN, 2, "declared (requirements.txt or the reference environment) but not installed"),
    ("cuda_at_import", Severity.WARN, 4, "Torch not compiled with CUDA enabled; not counted as a defect"),
])
def test_failures_are_classified_at_the_script_line(fixture, severity, line, text, smoke_folder):
    finding = only_finding(smoke(smoke_folder(fixture)))
    assert (finding.rule, finding.severity, finding.line) == ("IMPORT_FAIL", severity, line)
    assert finding.file == "train_gpt.py"
    assert text in finding.message


def test_cuda_at_import_says_what_to_do(smoke_folder):
    finding = only_finding(smoke(smoke_folder("cuda_at_import")))
    assert finding.hint == "The script needs a GPU at import: move CUDA work into main()."


def test_newer_syntax_than_the_python_that_ran_is_the_version_checks_not_a_second_fail(smoke_folder):
    sub = smoke_folder("pep701_fstring")
    report = api.audit([str(sub.root)], AuditOptions(smoke=True, only=frozenset({"IMPORT_FAIL", "PY_SYNTAX_TOO_NEW"})))
    findings = report.submissions[0].findings
    assert [f.rule for f in findings if f.severity == Severity.FAIL] == ["PY_SYNTAX_TOO_NEW"]  # the target is 3.10
    (smoke,) = [f for f in findings if f.rule == "IMPORT_FAIL"]
    if sys.version_info >= (3, 12):
        assert smoke.severity == Severity.INFO and "SMOKE_TEST_PASS" in smoke.message
    else:
        assert (smoke.severity, smoke.line) == (Severity.WARN, 5)
        assert f"on Python {platform.python_version()}, which is older than the syntax" in smoke.message


def test_the_target_python_runs_the_import_when_installed(smoke_folder, tmp_path, monkeypatch):
    """A `python3.N` of the target on PATH with torch installed runs the import; one without torch
    does not, and the finding names the Python that ran instead."""
    other = (3, 10) if sys.version_info[:2] != (3, 10) else (3, 11)
    label = f"{other[0]}.{other[1]}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / f"python{label}"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    sub = smoke_folder("sibling_import")
    options = AuditOptions(smoke=True, target_python=other)

    fake.write_text("#!/bin/sh\nexit 1\n")  # no torch there
    fake.chmod(0o755)
    result = smoke(sub, options)
    assert result.outcome == "pass" and result.interpreter == sys.executable
    assert f"Python {platform.python_version()} ran it: no python{label} with torch" in result.findings[0].message

    fake.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")  # stands for a python{label} with torch
    result = smoke(sub, options)
    assert result.outcome == "pass", (result.stopped_by, result.error)
    assert result.interpreter == str(fake)


def test_a_failure_at_a_stub_is_a_stub_limit_naming_the_name(smoke_folder):
    finding = only_finding(smoke(smoke_folder("stub_version")))
    assert (finding.rule, finding.severity, finding.line) == ("IMPORT_STUB_LIMIT", Severity.WARN, 3)
    assert "stubbed GPU-only name flash_attn.__version__" in finding.message


def test_a_failure_in_a_sibling_module_points_into_it(smoke_folder):
    finding = only_finding(smoke(smoke_folder("sibling_error")))
    assert (finding.severity, finding.file, finding.line) == (Severity.FAIL, "helpers.py", 8)
    assert finding.evidence == "WARMUP = lr(undefined_warmup_steps)"


def test_a_wrapped_script_runs_its_payload_and_maps_lines_into_it(smoke_folder):
    sub = smoke_folder("sibling_import")
    script = sub.scripts["train_gpt.py"]
    # What the static unwrapper fills in for an exec(lzma...) wrapper; the file on disk is not run.
    script.unwrapped = "import os\n\nRATE = os.sep * undefined_rate\n"
    script.wrapper_note = "train_gpt.py:2, lzma + base85"
    finding = only_finding(smoke(sub))
    assert (finding.severity, finding.file, finding.line) == (Severity.FAIL, "train_gpt.py", 3)
    assert finding.via == "line 3 of the source unwrapped from train_gpt.py:2, lzma + base85"
    assert finding.evidence == "RATE = os.sep * undefined_rate"


def test_both_rules_share_one_smoke_import(smoke_folder, monkeypatch):
    calls = []
    real = smoke_checks.run.run_smoke
    monkeypatch.setattr(smoke_checks.run, "run_smoke", lambda sub, options: calls.append(sub) or real(sub, options))
    sub = smoke_folder("stub_version")
    report = api.audit([str(sub.root)], AuditOptions(smoke=True, only=frozenset({"IMPORT_FAIL", "IMPORT_STUB_LIMIT"})))
    assert len(calls) == 1
    assert [f.rule for f in report.submissions[0].findings] == ["IMPORT_STUB_LIMIT"]
    assert report.exit_code == 0  # a WARN does not fail without --strict


def test_without_smoke_nothing_is_imported(smoke_folder, monkeypatch):
    monkeypatch.setattr(smoke_checks.run, "run_smoke", lambda sub, options: pytest.fail("imported"))
    sub = smoke_folder("syntax_error")
    report = api.audit([str(sub.root)], AuditOptions(only=frozenset({"IMPORT_FAIL", "IMPORT_STUB_LIMIT"})))
    assert report.submissions[0].findings == []
