"""`pgolf audit` settings beyond the flags: `[tool.pgolf]` in pyproject.toml, waiver comments in
the submission's code, -q/-v, --exit-zero, and the closing summary line."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from support import good_folder_files, record_log, write_folder

from audits.submission import codesize
from pgolf_cli.main import cli

NAME = "2026-04-09_Good_Run"
NEW_SYNTAX = "type Vector = list[float]\n"  # PEP 695: Python 3.12 syntax


def audit(*args, env=None):
    result = CliRunner().invoke(cli, ["audit", *args, "--no-smoke"], catch_exceptions=False, env=env)
    return result.exit_code, result.output


def audit_json(*args):
    code, out = audit(*args, "--format", "json")
    return code, json.loads(out)


def folder_with_script(root, script: str):
    files = good_folder_files()
    files["train_gpt.py"] = script
    return write_folder(root / "records" / "track_10min_16mb" / NAME, files)


def findings(doc, rule):
    return [f for f in doc["submissions"][0]["findings"] if f["rule"] == rule]


def test_tool_pgolf_sets_python_waivers_and_baseline(tmp_path):
    folder = folder_with_script(tmp_path, "import torch\n" + NEW_SYNTAX)
    assert audit_json(str(folder))[0] == 1  # 3.12 syntax fails the 3.10 gate
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "mine"\n\n[tool.pgolf]\npython = "3.12"\nbaseline-bpb = [1.2, 1.21, 1.19]\n'
        '[tool.pgolf.waivers]\nFEWER_THAN_3_SEEDS = "seed 999 is rerunning"\n')
    code, doc = audit_json(str(folder))
    assert code == 0 and doc["target_python"] == "3.12"
    assert doc["target_python_origin"] == f"[tool.pgolf] in {tmp_path / 'pyproject.toml'}"
    assert doc["waivers"] == {"FEWER_THAN_3_SEEDS": "seed 999 is rerunning"}
    assert not findings(doc, "PY_SYNTAX_TOO_NEW")
    significance = findings(doc, "NOT_SIGNIFICANT")  # the baseline was read: a significance result
    assert significance and "baseline-bpb of [tool.pgolf]" in json.dumps(significance)
    # the command line wins; --no-config drops the table
    assert audit_json(str(folder), "--python", "3.10")[1]["target_python"] == "3.10"
    code, doc = audit_json(str(folder), "--no-config")
    assert code == 1 and doc["waivers"] == {} and findings(doc, "PY_SYNTAX_TOO_NEW")


def test_the_search_stops_at_the_checkouts_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.pgolf]\npython = "3.12"\n')
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    folder = folder_with_script(repo, "import torch\n")
    assert audit_json(str(folder))[1]["target_python"] == "3.10"
    (repo / "pyproject.toml").write_text('[tool.black]\nline-length = 100\n')  # no [tool.pgolf]
    assert audit_json(str(folder))[1]["target_python"] == "3.10"


@pytest.mark.parametrize("table,message", [
    ('[tool.pgolf]\npyton = "3.10"\n', "unknown key 'pyton'"),
    ('[tool.pgolf]\npython = "2.7"\n', "is not a Python version"),
    ('[tool.pgolf]\nbaseline-bpb = "fast"\n', "baseline-bpb must be"),
    ('[tool.pgolf.waivers]\nFEWER_THAN_3_SEEDS = ""\n', "empty reason"),
    ('[tool.pgolf.waivers]\nNO_SUCH_RULE = "because"\n', "unknown rule 'NO_SUCH_RULE'"),
    ('[tool.pgolf\n', "not valid TOML"),
])
def test_a_bad_table_is_one_line_and_exit_2(tmp_path, table, message):
    folder = folder_with_script(tmp_path, "import torch\n")
    (tmp_path / "pyproject.toml").write_text(table)
    result = CliRunner().invoke(cli, ["audit", str(folder), "--no-smoke"])
    assert result.exit_code == 2 and message in result.output
    assert result.output.startswith("pgolf: ") and len(result.output.strip().splitlines()) == 1


def test_a_waiver_comment_with_a_reason_waives_its_line_only(tmp_path):
    script = ("import torch\n"
              "# pgolf: waive PY_SYNTAX_TOO_NEW the box runs 3.12 for this track\n"
              + NEW_SYNTAX + NEW_SYNTAX.replace("Vector", "Matrix"))
    code, doc = audit_json(str(folder_with_script(tmp_path, script)))
    syntax = findings(doc, "PY_SYNTAX_TOO_NEW")
    assert {(f["line"], f["waived"]) for f in syntax} == {(3, "the box runs 3.12 for this track"), (4, None)}
    assert code == 1  # line 4 still fails


def test_a_waiver_comment_on_the_same_line(tmp_path):
    script = "import torch\n" + NEW_SYNTAX.rstrip() + "  # pgolf: waive PY_SYNTAX_TOO_NEW runs on 3.12\n"
    code, doc = audit_json(str(folder_with_script(tmp_path, script)))
    assert code == 0
    assert [f["waived"] for f in findings(doc, "PY_SYNTAX_TOO_NEW")] == ["runs on 3.12"]
    code, doc = audit_json(str(tmp_path / "records" / "track_10min_16mb" / NAME), "--no-waiver-comments")
    assert code == 1 and [f["waived"] for f in findings(doc, "PY_SYNTAX_TOO_NEW")] == [None]


@pytest.mark.parametrize("comment,message", [
    ("# pgolf: waive PY_SYNTAX_TOO_NEW", "waiver of PY_SYNTAX_TOO_NEW gives no reason"),
    ("# pgolf: waive PY_SYNTAX_TOO_NEWW it is fine", "unknown rule 'PY_SYNTAX_TOO_NEWW'"),
    ("# pgolf: waive", "names no rule"),
])
def test_a_waiver_comment_without_a_reason_is_a_finding_and_waives_nothing(tmp_path, comment, message):
    script = "import torch\n" + comment + "\n" + NEW_SYNTAX
    code, doc = audit_json(str(folder_with_script(tmp_path, script)))
    assert code == 1
    assert [f["waived"] for f in findings(doc, "PY_SYNTAX_TOO_NEW")] == [None]
    invalid = findings(doc, "INLINE_WAIVER_INVALID")
    assert [(f["severity"], f["file"], f["line"]) for f in invalid] == [("WARN", "train_gpt.py", 2)]
    assert message in invalid[0]["message"]


def failing(tmp_path):
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)
    return write_folder(tmp_path / NAME, files)


def test_exit_zero_keeps_the_report_and_exit_2(tmp_path):
    folder = failing(tmp_path)
    code, out = audit(str(folder), "--format", "text", "--exit-zero")
    assert code == 0 and "verdict: ILLEGAL (TRAIN_OVER_BUDGET" in out
    assert audit(str(tmp_path / "missing"), "--exit-zero")[0] == 2


def test_quiet_normal_verbose_and_the_summary_line(tmp_path):
    folder = failing(tmp_path)
    _, quiet = audit(str(folder), "--format", "text", "-q")
    _, normal = audit(str(folder), "--format", "text")
    _, verbose = audit(str(folder), "--format", "text", "-v")
    summary = re.compile(r"ILLEGAL: 1 folder; 1 FAIL, \d+ WARN, \d+ INFO; \d+\.\d s")
    for out in (quiet, normal, verbose):
        assert summary.fullmatch(out.splitlines()[-1]), out.splitlines()[-1]
        assert "FAIL TRAIN_OVER_BUDGET train_seed42.log:" in out
    assert "INFO" not in quiet.replace(quiet.splitlines()[-1], "") and "evidence:" not in quiet
    assert "INFO " in normal and "source:" not in normal and "nothing to report:" not in normal
    assert "source: " in verbose and "nothing to report: " in verbose
    assert len(quiet.splitlines()) < len(normal.splitlines()) < len(verbose.splitlines())
    assert CliRunner().invoke(cli, ["audit", str(folder), "-q", "-v"]).exit_code == 2


def test_the_summary_counts_every_folder(tmp_path):
    bad = failing(tmp_path / "a")
    good = write_folder(tmp_path / "b" / NAME, good_folder_files())
    _, out = audit(str(bad), str(good), "--format", "text", "-q")
    assert re.fullmatch(r"ILLEGAL: 2 folders \(1 ILLEGAL, 1 PASS\); 1 FAIL, \d+ WARN, \d+ INFO; \d+\.\d s",
                        out.splitlines()[-1])


def test_the_rich_report_folds_long_log_names_at_80_columns(tmp_path):
    files = good_folder_files()
    long_name = "train_seed42_" + "ablation_without_the_parallel_residuals_" * 2 + "rerun.log"
    files[long_name] = files.pop("train_seed42.log")
    folder = write_folder(tmp_path / NAME, files)
    _, out = audit(str(folder), "--format", "rich", env={"COLUMNS": "80", "TERM": "dumb"})
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in out
    header = next(i for i, line in enumerate(lines) if line.split("┃")[0].strip() == "seed")
    cells = [line.split("│")[1].strip() for line in lines[header + 2:] if line.count("│") >= 6]
    assert long_name in "".join(cells)
    assert re.fullmatch(r"PASS: 1 folder; 0 FAIL, \d+ WARN, \d+ INFO; \d+\.\d s", lines[-1])


def test_a_waiver_comment_in_a_wrappers_source_waives_there(tmp_path):
    source = "import torch\n" + NEW_SYNTAX.rstrip() + "  # pgolf: waive PY_SYNTAX_TOO_NEW runs on 3.12\n"
    code, doc = audit_json(str(folder_with_script(tmp_path, codesize.wrap(source))))
    syntax = findings(doc, "PY_SYNTAX_TOO_NEW")
    assert [(f["line"], f["waived"]) for f in syntax] == [(2, "runs on 3.12")] and syntax[0]["via"]
    assert code == 0


def test_a_review_does_not_let_the_authors_waiver_comment_decide(tmp_path):
    script = "import torch\n" + NEW_SYNTAX.rstrip() + "  # pgolf: waive PY_SYNTAX_TOO_NEW runs on 3.12\n"
    folder = folder_with_script(tmp_path, script)
    assert audit(str(folder))[0] == 0
    result = CliRunner().invoke(cli, ["review", str(folder), "--no-smoke"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.startswith("**pgolf review: NEEDS_ACTION**")
    assert "1 FAIL" in result.output.splitlines()[0]


def test_with_base_the_table_comes_from_the_base_commit(tmp_path):
    """The base commit's [tool.pgolf] governs the change's audit; the change's own edit of it
    does not."""
    from prrepos import add_pr, challenge_repo, git
    repo = challenge_repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text('[tool.pgolf.waivers]\nPY_SYNTAX_TOO_NEW = "the box runs 3.12"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "settings")
    files = {f"records/track_10min_16mb/{NAME}/{k}": v for k, v in good_folder_files().items()}
    files[f"records/track_10min_16mb/{NAME}/train_gpt.py"] = "import torch\n" + NEW_SYNTAX
    files["pyproject.toml"] = '[tool.pgolf]\npython = "3.13"\n'  # the PR's own edit: not read
    add_pr(repo, 1, files)
    git(repo, "checkout", "-q", "refs/pull/1/head")
    code, doc = audit_json(str(repo), "--base", "main")
    assert doc["waivers"] == {"PY_SYNTAX_TOO_NEW": "the box runs 3.12"} and doc["target_python"] == "3.10"
    assert [f["waived"] for f in findings(doc, "PY_SYNTAX_TOO_NEW")] == ["the box runs 3.12"]
