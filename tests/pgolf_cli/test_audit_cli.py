"""`pgolf audit` from the command line: formats, exit codes and one-line errors."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from pgolf_cli.main import cli
from support import FIXTURES, good_folder_files, record_log, write_folder

GOOD = "2026-04-09_Good_Run"


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def failing(tmp_path):
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)
    return write_folder(tmp_path / GOOD, files)


def test_json_contract(failing):
    result = run("audit", str(failing), "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert {"pgolf_version", "target_python", "submissions"} <= set(data)
    sub = data["submissions"][0]
    assert sub["verdict"] == "ILLEGAL" and {"path", "seeds", "findings"} <= set(sub)
    assert sub["findings"][0]["rule"] == "TRAIN_OVER_BUDGET" and sub["findings"][0]["level"] == "ILLEGAL"
    seed = next(s for s in sub["seeds"] if s["seed"] == 42)
    for key in ("seed", "log", "val_bpb", "val_loss", "train_time_ms", "eval_time_ms", "model_bytes",
                "artifact_bytes"):
        assert key in seed
    assert seed["train_time_ms"] == 650000 and seed["sources"]["train_time_ms"]["line"] > 0
    finding = next(f for f in sub["findings"] if f["rule"] == "TRAIN_OVER_BUDGET")
    assert set(finding) >= {"rule", "severity", "file", "line", "message", "evidence", "source"}
    assert finding["severity"] == "FAIL" and finding["file"] == "train_seed42.log"


def test_text_github_markdown(failing):
    text = run("audit", str(failing), "--format", "text").output
    assert "FAIL TRAIN_OVER_BUDGET train_seed42.log:" in text
    assert "verdict: ILLEGAL (TRAIN_OVER_BUDGET at train_seed42.log:" in text
    gh = run("audit", str(failing), "--format", "github").output
    line = next(x for x in gh.splitlines() if "TRAIN_OVER_BUDGET" in x)
    assert line.startswith("::error file=") and ",line=" in line and "title=pgolf TRAIN_OVER_BUDGET::" in line
    md = run("audit", str(failing), "--format", "markdown").output
    assert md.startswith("## pgolf audit: ILLEGAL") and "`TRAIN_OVER_BUDGET`" in md


def test_output_file_is_written_whole(failing, tmp_path):
    out = tmp_path / "reports" / "audit.json"
    result = run("audit", str(failing), "--format", "json", "-o", str(out))
    assert result.exit_code == 1 and result.output == ""
    assert json.loads(out.read_text())["submissions"][0]["verdict"] == "ILLEGAL"


def test_strict_and_waive_from_the_command_line(tmp_path):
    folder = write_folder(tmp_path / GOOD, good_folder_files(seeds=(42, 314), bpbs=(1.0809, 1.0811)))
    assert run("audit", str(folder)).exit_code == 0
    assert run("audit", str(folder), "--strict").exit_code == 1
    result = run("audit", str(folder), "--strict", "--waive", "FEWER_THAN_3_SEEDS=seed 999 crashed twice")
    assert result.exit_code == 0 and "waived: seed 999 crashed twice" in result.output


@pytest.mark.parametrize("args,message", [
    (["audit"], "give at least one records folder"),
    (["audit", "/no/such/folder"], "no such folder"),
    (["audit", "x", "--only", "NOPE"], "unknown rule NOPE"),
    (["audit", "x", "--python", "2.7"], "not a Python version"),
    (["audit", "x", "--waive", "FOLDER_NAME"], "no reason"),
    (["audit", "x", "--baseline-bpb", "fast"], "not a number"),
    (["audit", "--explain", "NOPE"], "unknown rule"),
])
def test_usage_errors_exit_2_with_one_line(args, message):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_list_rules_and_explain():
    listing = run("audit", "--list-rules").output
    assert "GPTQ_CALIB_AFTER_BUDGET" in listing and "budgets:" in listing
    text = run("audit", "--explain", "TRAIN_OVER_BUDGET").output
    assert "What it checks" in text and "Sources:" in text


def test_real_fixture_through_the_console_entry_point():
    folder = FIXTURES / "2026-03-17_NaiveBaseline"
    done = subprocess.run([sys.executable, "-m", "pgolf_cli", "audit", str(folder), "--format", "json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr == ""
    sub = json.loads(done.stdout)["submissions"][0]
    assert [f["rule"] for f in sub["findings"] if f["severity"] == "FAIL"] == ["MISSING_FILES"]


def test_unexpected_error_is_one_line_without_traceback(tmp_path):
    code = ("import sys; sys.argv=['pgolf','audit','x']\n"
            "import audits.api as a\n"
            "def boom(*args, **kw): raise RuntimeError('disk on fire')\n"
            "a.audit = boom\n"
            "from pgolf_cli.main import main; main()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "pgolf: internal error: RuntimeError: disk on fire (rerun with --debug for the traceback)"]


def test_changed_files_from_a_file_and_from_stdin(tmp_path):
    folder = write_folder(tmp_path / GOOD, good_folder_files())
    lines = "".join(f"A\trecords/track_10min_16mb/{GOOD}/{rel}\n" for rel in good_folder_files())
    listing = tmp_path / "changes.txt"
    listing.write_text(lines + "M\tREADME.md\n")
    for args, stdin in (([str(listing)], None), (["-"], lines + "D\tdata/x.bin\n")):
        done = subprocess.run([sys.executable, "-m", "pgolf_cli", "audit", "--no-smoke", "--format", "json",
                               "--only", "LAYOUT_NOT_SINGLE_FOLDER", "--changed-files", *args, str(folder)],
                              input=stdin, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        found = json.loads(done.stdout)["submissions"][0]["findings"]
        assert [(f["severity"], f["file"]) for f in found] == [
            ("FAIL", "README.md" if stdin is None else "data/x.bin")]


def test_changed_files_errors_are_one_line(tmp_path):
    folder = write_folder(tmp_path / GOOD, good_folder_files())
    bad = tmp_path / "bad.txt"
    bad.write_text("A\t../../etc/passwd\n")
    big = tmp_path / "big.txt"
    with open(big, "wb") as handle:
        handle.truncate(5 * 1024 * 1024)
    for args, message in ((["--changed-files", str(bad)], "line 1: '../../etc/passwd' leaves"),
                          (["--changed-files", str(big)], "over 4 MiB"),
                          (["--changed-files", str(tmp_path / "none.txt")], "cannot read it"),
                          (["--changed-files", str(bad), "--base", "main"], "not both")):
        result = run("audit", "--no-smoke", *args, str(folder))
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1
