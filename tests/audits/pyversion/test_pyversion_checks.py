"""The version checks through the loader and the engine, as `pgolf audit` runs them."""

from __future__ import annotations

import base64
import inspect
import json
import lzma
import zlib

import pytest
from click.testing import CliRunner

from audits import catalogue, registry
from audits.submission import codesize
from audits.context import AuditOptions
from audits.engine import audit_submission
from audits.submission import load
from pgolf_cli.main import cli

SEED = 'import os\n\n\ndef log(s):\n    print(s)\n\n\nx = ["a", "b"]\nlog(f"{", ".join(x)}")\n'
RULES = ("PY_SYNTAX_TOO_NEW", "PY_SYNTAX_ERROR", "PY_STDLIB_TOO_NEW", "WRAPPER_UNREADABLE")


def _folder(tmp_path, files: dict[str, str | bytes]):
    folder = tmp_path / "records" / "track_10min_16mb" / "2026-05-01_Test"
    folder.mkdir(parents=True)
    files = {"README.md": "# test\n", "submission.json": json.dumps({"author": "a"}), **files}
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def _findings(folder, target=(3, 10)):
    report = audit_submission(load(folder), AuditOptions(target_python=target))
    assert report.errors == []
    return [f for f in report.findings if f.rule in RULES]


def test_wrapped_seed_case_is_reported_at_the_unwrapped_line_and_column(tmp_path):
    folder = _folder(tmp_path, {"train_gpt.py": codesize.wrap(SEED)})
    [finding] = _findings(folder)
    assert (finding.rule, finding.file, finding.line, finding.column) == ("PY_SYNTAX_TOO_NEW", "train_gpt.py", 9, 8)
    assert "f-string: expecting '}'" in finding.message
    assert finding.via == "line 9 of the source unwrapped from train_gpt.py:2 (raw lzma + base85)"
    assert finding.evidence == 'log(f"{", ".join(x)}")'


@pytest.mark.parametrize("shape", ["raw lzma", "xz lines", "nested", "stub"])
def test_line_mapping_holds_for_every_wrapper_shape(tmp_path, shape):
    code = "import os\n" * 20 + 'print(f"{d["key"]}")\n' + "x = 1\n" * 5
    if shape == "raw lzma":
        files, note = {"train_gpt.py": codesize.wrap(code)}, "train_gpt.py:2 (raw lzma + base85)"
    elif shape == "xz lines":
        payload = base64.b85encode(lzma.compress(code.encode())).decode()
        lines = '"\n"'.join(payload[i:i + 50] for i in range(0, len(payload), 50))
        files = {"train_gpt.py": f'import lzma as L,base64 as B\n\nexec(L.decompress(B.b85decode("{lines}")))\n'}
        note = "train_gpt.py:3 (lzma + base85)"
    elif shape == "nested":
        inner = codesize.wrap(code)
        files = {"train_gpt.py": "import zlib,base64\nexec(zlib.decompress(base64.b64decode(%r)))\n"
                 % base64.b64encode(zlib.compress(inner.encode())).decode()}
        note = "train_gpt.py:2 (zlib + base64), then line 2 of that payload (raw lzma + base85)"
    else:
        files = {"train_gpt.py": 'exec(open(__file__.replace("train_gpt.py","payload.bin")).read())\n',
                 "payload.bin": code}
        note = "train_gpt.py:1 (runs payload.bin)"
    [finding] = _findings(_folder(tmp_path, files))
    assert (finding.file, finding.line) == ("train_gpt.py", 21)
    assert finding.via == f"line 21 of the source unwrapped from {note}"
    assert finding.evidence == 'print(f"{d["key"]}")'


def test_a_stub_and_its_sibling_script_are_reported_once(tmp_path):
    folder = _folder(tmp_path, {
        "train_gpt.py": 'exec(open(__file__.replace("train_gpt.py","train_gpt_decode.py")).read())\n',
        "train_gpt_decode.py": SEED})
    [finding] = _findings(folder)
    assert finding.file == "train_gpt_decode.py" and finding.line == 9 and finding.via is None
    assert "also run by train_gpt.py" in finding.message


def test_python_312_target_accepts_pep701(tmp_path):
    folder = _folder(tmp_path, {"train_gpt.py": codesize.wrap(SEED + "import tomllib\n")})
    assert {f.rule for f in _findings(folder)} == {"PY_SYNTAX_TOO_NEW", "PY_STDLIB_TOO_NEW"}
    assert _findings(folder, (3, 12)) == []


def test_cli_python_option_changes_the_target(tmp_path):
    folder = _folder(tmp_path, {"train_gpt.py": SEED})
    runner = CliRunner()
    default = runner.invoke(cli, ["audit", str(folder), "--format", "json", "--only", "PY_SYNTAX_TOO_NEW"])
    newer = runner.invoke(cli, ["audit", str(folder), "--format", "json", "--only", "PY_SYNTAX_TOO_NEW",
                                "--python", "3.12"])
    assert (default.exit_code, newer.exit_code) == (1, 0)
    default, newer = json.loads(default.output), json.loads(newer.output)
    assert (default["target_python"], newer["target_python"]) == ("3.10", "3.12")
    assert newer["target_python_origin"] == "--python"
    assert [f["rule"] for f in default["submissions"][0]["findings"]] == ["PY_SYNTAX_TOO_NEW"]
    assert newer["submissions"][0]["findings"] == []


def test_source_no_python_compiles_is_a_syntax_error(tmp_path):
    folder = _folder(tmp_path, {"train_gpt.py": "import os\n\ndef f(:\n    pass\n"})
    [finding] = _findings(folder)
    assert (finding.rule, finding.line) == ("PY_SYNTAX_ERROR", 3)


def test_unreadable_payloads_are_findings_with_the_exec_line(tmp_path):
    good = codesize.wrap(SEED)
    cut = good[:good.index('("') + 60] + good[good.index('")'):]
    bomb = "import zlib,base64\n\nexec(zlib.decompress(base64.b85decode(%r)))\n" \
        % base64.b85encode(zlib.compress(b"#" * 20_000_000)).decode()
    folder = _folder(tmp_path, {"train_gpt.py": cut, "bomb.py": bomb,
                                "stub.py": "exec(open('../../../secret.py').read())\n"})
    findings = {f.file: f for f in _findings(folder)}
    assert findings["train_gpt.py"].rule == "WRAPPER_UNREADABLE" and findings["train_gpt.py"].line == 2
    assert "truncated" in findings["train_gpt.py"].message
    assert "more than 16,000,000 bytes" in findings["bomb.py"].message and findings["bomb.py"].line == 3
    assert "outside the folder" in findings["stub.py"].message


def test_non_utf8_and_oversized_files_do_not_crash(tmp_path):
    folder = _folder(tmp_path, {"train_gpt.py": b"x = '\xff\xfe'\n", "big.py": b"x = 1\n" * 9_000_000})
    report = audit_submission(load(folder), AuditOptions())
    assert report.errors == []
    unreadable = {f.file for f in report.findings if f.rule == "FILE_UNREADABLE"}
    assert unreadable == {"train_gpt.py", "big.py"}
    assert [f for f in report.findings if f.rule in RULES] == []


def test_a_script_is_read_in_the_encoding_it_declares(tmp_path):
    """PEP 263: Python reads a declared latin-1 file (pgolf's packed form is one); a declaration
    Python does not know is a file it refuses, said in one finding."""
    folder = _folder(tmp_path, {"train_gpt.py": b"# coding: latin-1\nx = '\xe9\xff'\n",
                                "other.py": b"# coding: klingon\nx = 1\n"})
    report = audit_submission(load(folder), AuditOptions())
    assert report.errors == []
    [unreadable] = [f for f in report.findings if f.rule == "FILE_UNREADABLE"]
    assert unreadable.file == "other.py" and "unknown encoding: klingon" in unreadable.message


def test_the_rules_have_docs_with_every_heading():
    for rule in RULES:
        assert rule in catalogue.BY_ID
        doc = inspect.cleandoc(registry.doc(rule))
        for heading in ("What it checks:", "Why it matters:", "Illegal:", "Legal:", "Known limits:"):
            assert heading in doc, f"{rule}: no '{heading}'"
