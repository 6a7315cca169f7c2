"""`pgolf audit --probe`: runs pgolf's own probes only for folders that ship pgolf's bundle."""

import hashlib
import json

import pytest
from click.testing import CliRunner

from audits.rules import probe as probe_check
from pgolf_cli.main import cli
from trainer.config import load_config
from trainer.probe import ProbeResult

BUNDLE = "print('the bundle pgolf builds')\n"
GATED = "PINNED: dict = {'smear_gate_enabled': True}\nprint('a record bundle with SmearGate')\n"


def _folder(tmp_path, script: str | bytes):
    folder = tmp_path / "records" / "track_10min_16mb" / "2026-05-01_Probe"
    folder.mkdir(parents=True)
    (folder / "train_gpt.py").write_bytes(script if isinstance(script, bytes) else script.encode())
    return folder


@pytest.fixture
def seams(monkeypatch):
    """The bundler and the probe runner are other components: stand in for them, and count
    how often the probes run."""
    runs = []

    def results(settings=()):
        runs.append(settings)
        return tuple(runs_result)

    runs_result = [ProbeResult(c, p, True, "ok") for c in ("C1", "C3", "C4")
                   for p in ("quantized", "quantized_ttt")]
    monkeypatch.setattr(probe_check, "bundle_hashes",
                        lambda pinned=None: {
                            None: {hashlib.sha256(BUNDLE.encode()).hexdigest(): "the bundle"},
                            (("smear_gate_enabled", True),):
                            {hashlib.sha256(GATED.encode()).hexdigest(): "the record bundle"},
                        }.get(pinned, {}))
    monkeypatch.setattr(probe_check, "probe_results", results)
    return runs, runs_result


def _audit(folder, *extra):
    result = CliRunner().invoke(cli, ["audit", str(folder), "--format", "json", "--only",
                                      "EVAL_CAUSALITY_PROBE", *extra])
    return result.exit_code, json.loads(result.output)["submissions"][0]["findings"]


def test_without_the_flag_nothing_runs(tmp_path, seams):
    code, findings = _audit(_folder(tmp_path, BUNDLE))
    assert code == 0 and findings == [] and seams[0] == []


def test_the_bundle_is_probed_and_passes(tmp_path, seams):
    """The full bundle holds every switch's code: it is probed with each on (LoRA TTT, the tilt)."""
    code, findings = _audit(_folder(tmp_path, BUNDLE), "--probe")
    assert code == 0 and seams[0] == [(("LQER_ENABLED", "1"), ("NGRAM_TILT_ENABLED", "1"),
                                       ("SMEAR_GATE_ENABLED", "1"), ("SPARSE_ATTN_GATE_ENABLED", "1"),
                                       ("TTT_MODE", "lora"))]
    assert [f["severity"] for f in findings] == ["INFO"]
    assert "6 probes passed (C1, C3, C4 on quantized, quantized_ttt)" in findings[0]["message"]


def test_a_record_bundle_is_probed_with_the_switches_it_pins(tmp_path, seams):
    code, findings = _audit(_folder(tmp_path, GATED), "--probe")
    assert code == 0 and seams[0] == [(("SMEAR_GATE_ENABLED", "1"),)]
    assert "the record bundle of this pgolf" in findings[0]["evidence"]


def test_another_script_is_not_run_and_not_probed(tmp_path, seams, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the script's `touch` would land if anything ran it
    code, findings = _audit(_folder(tmp_path, "import os\nos.system('touch PWNED')\n"), "--probe")
    assert code == 0 and seams[0] == []
    assert "not the bundle this pgolf version builds" in findings[0]["message"]
    assert findings[0]["unchecked"]  # so compliance summaries say "not checked", never "pass"
    assert not (tmp_path / "PWNED").exists()


def test_a_failed_probe_is_a_fail_finding(tmp_path, seams):
    index = [(r.condition, r.phase) for r in seams[1]].index(("C3", "quantized_ttt"))
    seams[1][index] = ProbeResult("C3", "quantized_ttt", False, "token 100 replaced: ...")
    code, findings = _audit(_folder(tmp_path, BUNDLE), "--probe")
    assert code == 1
    assert [(f["severity"], f["rule"]) for f in findings] == [("FAIL", "EVAL_CAUSALITY_PROBE")]
    assert findings[0]["message"].startswith("C3 fails in the quantized_ttt phase")


@pytest.mark.slow
@pytest.mark.parametrize("record", [False, True])
def test_a_folder_shipping_this_pgolf_bundle_is_really_probed(tmp_path, record):
    """No stand-ins: the bundle `pgolf train` would write (the full one, or the record one for
    the record settings in the self-extracting form `pgolf package` ships), and the probes on
    pgolf's own code."""
    from trainer.bundle import build_bundle
    from trainer.codesize import shipped_form
    from trainer.config import load_config, record_settings
    probe_check.probe_results.cache_clear()
    shipped = shipped_form(build_bundle(settings=record_settings(load_config({})))) if record \
        else build_bundle()
    code, findings = _audit(_folder(tmp_path, shipped), "--probe")
    assert code == 0, findings
    assert [f["severity"] for f in findings] == ["INFO"]
    assert "21 probes passed (C1, C3, C4 on quantized, quantized_sliding_window, quantized_ttt)" \
        in findings[0]["message"]


@pytest.mark.slow
def test_the_frontier_bundle_is_probed_with_its_gates_and_lqer(tmp_path):
    """The frontier preset's train_gpt.py, compact form: probed with SmearGate, the attention
    gate, LQER and the n-gram tilt on, and the TTT mode it pins, and it passes."""
    from trainer.bundle import build_bundle
    from trainer.codesize import compact_form, shipped_form
    from trainer.config import record_settings
    probe_check.probe_results.cache_clear()
    source = build_bundle(settings=record_settings(load_config({"PRESET": "frontier"})))
    code, findings = _audit(_folder(tmp_path, compact_form(source)), "--probe")
    assert code == 0, findings
    assert [f["severity"] for f in findings] == ["INFO"]
    assert "21 probes passed" in findings[0]["message"]
    assert probe_check.probe_results.cache_info().currsize == 1
    # Its switches, read from the PINNED of the source the wrapper holds, in either wrapper.
    known = probe_check.known_hashes(source)
    for shipped in (compact_form(source).encode(), shipped_form(source)):
        assert known[hashlib.sha256(shipped).hexdigest()][1] == (
            ("LQER_ENABLED", "1"), ("NGRAM_TILT_ENABLED", "1"), ("SMEAR_GATE_ENABLED", "1"),
            ("SPARSE_ATTN_GATE_ENABLED", "1"), ("TTT_MODE", "lora"))
