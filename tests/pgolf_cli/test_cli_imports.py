"""What `pgolf X --help`, a usage error and the audit import: `--help` and usage errors answer
without the trainer's torch, the audit's libcst or rich's display (a budget in modules, not in
seconds), and the audit, review and sweep run without torch (`pip install pgolf`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pgolf_cli.main import COMMANDS

HEAVY = ("torch", "libcst", "numpy", "sentencepiece", "matplotlib", "huggingface_hub", "rich")
BUDGET = 260  # modules in sys.modules, the interpreter's own included (about 200 today)
RECORDS = Path(__file__).parents[1] / "fixtures" / "records" / "track_10min_16mb"

# Runs pgolf with argv, then prints what was imported; `torch` set to None makes `import torch`
# fail (and find_spec say it is missing), as in an environment without it.
PROBE = """
import json, sys
if {no_torch}:
    sys.modules["torch"] = None
sys.argv = ["pgolf", *{argv!r}]
from pgolf_cli.main import main
try:
    main()
except SystemExit as exc:
    status = exc.code
else:
    status = 0
names = [n for n, m in sys.modules.items() if m is not None]
print(json.dumps({{"status": status, "modules": names}}), file=sys.__stderr__)
"""


def pgolf(*argv: str, no_torch: bool = False) -> tuple[int, set[str], str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(argv=list(argv), no_torch=no_torch)],
                          capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=600)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["status"], set(report["modules"]), done.stdout + done.stderr


def heavy(modules: set[str]) -> list[str]:
    return sorted(n for n in modules if n.split(".")[0] in HEAVY)


HELP = [[name, "--help"] for name in sorted(COMMANDS)] + [
    ["--help"], ["data", "fineweb", "--help"], ["data", "tokenizer", "--help"],
    ["data", "shards", "--help"], ["data", "verify", "--help"]]

USAGE_ERRORS = [
    ["audit"], ["audit", "x", "--quiet", "--verbose"], ["audit", "--format", "nope", "x"],
    ["train", "--set", "NUM_LAYRS=3"], ["train", "--preset", "nope"], ["train", "--set", "SEED"],
    ["package", "--name", "n", "--author", "a", "--github-id", "g"], ["package", "--track", "x"],
    ["review"], ["sweep", "--records", "--open"], ["sweep", "--prs", "9-1"],
    ["demo", "--seconds", "0"], ["data", "shards"], ["doctor", "--nope"], ["nope"]]


@pytest.mark.parametrize("argv", HELP, ids=" ".join)
def test_help_loads_nothing_heavy(argv):
    status, modules, output = pgolf(*argv)
    assert status == 0 and "Usage:" in output
    assert heavy(modules) == [] and len(modules) <= BUDGET, (len(modules), heavy(modules))


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=" ".join)
def test_a_usage_error_loads_nothing_heavy(argv):
    status, modules, output = pgolf(*argv)
    assert status == 2 and "Traceback" not in output
    assert heavy(modules) == [] and len(modules) <= BUDGET, (len(modules), heavy(modules))


def test_the_audit_runs_without_torch(tmp_path):
    folder = RECORDS / "2026-03-17_NaiveBaseline"
    status, modules, output = pgolf("audit", str(folder), "--format", "json", "-o",
                                    str(tmp_path / "a.json"), no_torch=True)
    assert status == 1 and "torch" not in modules  # MISSING_FILES fails it: an audit, not a crash
    assert "no smoke import: torch is not installed" in output
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["submissions"][0]["findings"]


@pytest.mark.parametrize("argv", [["train", "--preset", "tiny"], ["demo", "--out", "{tmp}/demo"]],
                         ids=" ".join)
def test_without_torch_training_says_what_to_install(argv, tmp_path):
    status, _, output = pgolf(*(a.format(tmp=tmp_path) for a in argv), no_torch=True)
    assert status == 2 and "Traceback" not in output
    assert "needs torch, which is not installed: pip install 'pgolf[train]'" in output
    assert not (tmp_path / "demo").exists()


def test_without_torch_the_smoke_import_and_the_probe_are_skipped_and_said_so(tmp_path):
    folder = Path(__file__).parents[1] / "fixtures" / "smoke" / "record"
    # --python of this interpreter: no other Python (one with torch) is looked for
    target = f"{sys.version_info[0]}.{sys.version_info[1]}"
    status, modules, _ = pgolf("audit", str(folder), "--smoke", "--probe", "--python", target,
                               "--format", "json", "-o", str(tmp_path / "a.json"), no_torch=True)
    assert status in (0, 1) and "torch" not in modules
    findings = json.loads((tmp_path / "a.json").read_text())["submissions"][0]["findings"]
    skipped = {f["rule"]: f for f in findings if f["rule"] in ("IMPORT_FAIL", "EVAL_CAUSALITY_PROBE")}
    assert set(skipped) == {"IMPORT_FAIL", "EVAL_CAUSALITY_PROBE"}
    for finding in skipped.values():
        assert finding["severity"] == "INFO" and finding["unchecked"] and "torch" in finding["message"]
