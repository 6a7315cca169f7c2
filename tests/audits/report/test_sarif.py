"""`pgolf audit --format sarif`: SARIF 2.1.0 that validates against the OASIS schema, with each
finding a result at its repository path and each rule described from the catalogue."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from localrepo import TRACK, pr_repository
from support import good_folder_files, record_log, write_folder

from audits import catalogue
from pgolf_cli.main import cli

# The SARIF 2.1.0 schema as the OASIS SARIF TC publishes it (oasis-tcs/sarif-spec,
# sarif-2.1/schema/sarif-schema-2.1.0.json, errata 01), stored unchanged.
SCHEMA = json.loads((Path(__file__).parents[2] / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())
NAME = "2026-04-09_Good_Run"


def sarif(*args) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["audit", *args, "--no-smoke", "--format", "sarif"],
                                catch_exceptions=False)
    doc = json.loads(result.output)
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)
    return result.exit_code, doc


def failing_files() -> dict[str, str]:
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)
    files["train_gpt.py"] = "import torch\nimport flash_attn_interface\n"
    return files


def test_the_schema_rejects_what_is_not_sarif():
    """The validator is live: a result without its message fails."""
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "X"}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(SCHEMA).validate(bad)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_failing_pr_folder_validates_and_points_into_the_repository(tmp_path):
    repo = pr_repository(tmp_path / "pg", NAME, failing_files())
    code, doc = sarif(str(repo), "--base", "main", "--waive", "FEWER_THAN_3_SEEDS=seed 999 crashed")
    assert code == 1
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.id for r in catalogue.RULES]
    budget = next(r for r in run["results"] if r["ruleId"] == "TRAIN_OVER_BUDGET")
    assert budget["level"] == "error" and rules[budget["ruleIndex"]]["id"] == "TRAIN_OVER_BUDGET"
    location = budget["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": f"{TRACK}/{NAME}/train_seed42.log", "uriBaseId": "SRCROOT"}
    log = (repo / TRACK / NAME / "train_seed42.log").read_text().splitlines()
    assert "650000ms" in log[location["region"]["startLine"] - 1]
    help_text = rules[budget["ruleIndex"]]["help"]["text"]
    assert help_text.startswith("TRAIN_OVER_BUDGET") and "What it checks" in help_text
    assert run["properties"]["verdicts"] == [{"submission": NAME, "verdict": "ILLEGAL"}]


def test_a_folder_outside_a_repository_is_named_by_its_file_uri(tmp_path):
    folder = write_folder(tmp_path / NAME, failing_files())
    _, doc = sarif(str(folder), "--waive", "FEWER_THAN_3_SEEDS=seed 999 crashed")
    results = doc["runs"][0]["results"]
    waived = [r for r in results if r["ruleId"] == "FEWER_THAN_3_SEEDS"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results if "locations" in r}
    assert (folder / "train_seed42.log").as_uri() in uris
    assert all(r.get("suppressions") == [{"kind": "external", "status": "accepted",
                                          "justification": "seed 999 crashed"}] for r in waived)


def test_submission_strings_stay_inert(tmp_path):
    attack = "\x1b]52;c;aGk=\x07\u202e"
    files = failing_files()
    files["train_seed42.log"] = files["train_seed42.log"].replace("step: 4550/20000", f"step: 4550/20000 {attack}")
    folder = write_folder(tmp_path / "records" / "track_10min_16mb" / (NAME + attack), files)
    _, doc = sarif(str(folder))
    text = json.dumps(doc, ensure_ascii=False)
    assert not any(ch in text for ch in "\x1b\x07\u202e")
    budget = next(r for r in doc["runs"][0]["results"] if r["ruleId"] == "TRAIN_OVER_BUDGET")
    assert budget["properties"]["evidence"].endswith("\\x1b]52;c;aGk=\\x07\\u202e")
    assert doc["runs"][0]["properties"]["verdicts"][0]["submission"] == NAME + "\\x1b]52;c;aGk=\\x07\\u202e"
