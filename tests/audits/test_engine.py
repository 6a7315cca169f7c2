"""Verdicts, exit codes, waivers, rule selection and internal errors."""

import pytest

from audits import api, engine, registry
from audits.context import AuditOptions
from audits.submission import InputError
from audits.waivers import load_waivers
from support import by_rule, good_folder_files, record_log, write_folder

GOOD = "2026-04-09_Good_Run"


def report(folder, **options):
    return api.audit([str(folder)], AuditOptions(**options))


@pytest.fixture
def warn_only(tmp_path):
    files = good_folder_files(seeds=(42, 314), bpbs=(1.0809, 1.0811))  # FEWER_THAN_3_SEEDS: WARN
    return write_folder(tmp_path / GOOD, files)


def test_clean_folder_passes_with_exit_0(tmp_path):
    r = report(write_folder(tmp_path / GOOD, good_folder_files()))
    assert r.submissions[0].verdict() == "PASS" and r.exit_code == 0


def test_warn_passes_with_exit_0_unless_strict(warn_only):
    assert report(warn_only).exit_code == 0 and report(warn_only).submissions[0].verdict() == "PASS"
    strict = report(warn_only, strict=True)
    assert strict.exit_code == 1 and strict.submissions[0].verdict(True) == "NEEDS_ACTION"


def test_fail_exits_1(tmp_path):
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)
    assert report(write_folder(tmp_path / GOOD, files)).exit_code == 1


def test_the_worst_level_decides_and_its_finding_comes_first(tmp_path):
    # A budget breach (ILLEGAL) and a missing README (NEEDS_ACTION): ILLEGAL decides, whatever the
    # rule names' order.
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)
    del files["README.md"]
    r = report(write_folder(tmp_path / GOOD, files)).submissions[0]
    assert {"MISSING_FILES", "TRAIN_OVER_BUDGET"} <= {f.rule for f in r.counted(False)}
    assert r.verdict() == "ILLEGAL" and r.findings[0].rule == "TRAIN_OVER_BUDGET"
    assert r.deciding() is r.findings[0]
    levels = [engine.level_of(f) for f in r.findings]
    assert levels == sorted(levels, key=registry.LEVELS.index)


def test_a_needs_action_finding_alone_asks_the_author_to_act(tmp_path):
    files = good_folder_files()
    del files["README.md"]
    r = report(write_folder(tmp_path / GOOD, files)).submissions[0]
    assert r.verdict() == "NEEDS_ACTION" and r.deciding().rule == "MISSING_FILES"


def test_every_rule_states_its_level():
    assert {row.level for row in registry.ROWS.values()} == {registry.ILLEGAL, registry.NEEDS_ACTION}
    with pytest.raises(ValueError, match="states no level"):
        registry.rules(registry.Rule("NO_LEVEL_GIVEN", registry.FAIL, "layout", "x", ()))


def test_waiver_is_echoed_and_stops_counting(warn_only):
    r = report(warn_only, strict=True, waivers={"FEWER_THAN_3_SEEDS": "third seed lost to a node failure"})
    waived = by_rule(r.submissions[0].findings, "FEWER_THAN_3_SEEDS", "WARN")
    assert waived and all(f.waived == "third seed lost to a node failure" for f in waived)
    assert r.exit_code == 0


def test_only_and_skip_select_rules(tmp_path):
    folder = write_folder(tmp_path / "badname", {"x.txt": "x"})
    only = report(folder, only=frozenset({"FOLDER_NAME"})).submissions[0].findings
    assert {f.rule for f in only} == {"FOLDER_NAME"}
    skipped = report(folder, skip=frozenset({"FOLDER_NAME", "MISSING_FILES"})).submissions[0].findings
    assert not {"FOLDER_NAME", "MISSING_FILES"} & {f.rule for f in skipped}


def test_a_crashing_check_is_an_internal_error_with_exit_2(tmp_path, monkeypatch):
    def broken(sub, options):
        raise ZeroDivisionError("boom")
        yield

    monkeypatch.setitem(registry.CHECKS, "FOLDER_NAME", broken)
    r = report(write_folder(tmp_path / GOOD, good_folder_files()))
    assert r.exit_code == 2 and "FOLDER_NAME" in r.submissions[0].errors[0]
    assert "boom" in r.submissions[0].errors[0]


def test_missing_path_and_file_path_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such folder"):
        report(tmp_path / "nope")
    (tmp_path / "f.py").write_text("x")
    with pytest.raises(InputError, match="not a folder"):
        report(tmp_path / "f.py")


def test_waiver_parsing(tmp_path):
    path = tmp_path / "waivers.txt"
    path.write_text("# reasons\nFOLDER_NAME: legacy folder name kept for history\n")
    assert load_waivers(("NOT_SIGNIFICANT=systems-only change",), (str(path),)) == {
        "FOLDER_NAME": "legacy folder name kept for history", "NOT_SIGNIFICANT": "systems-only change"}
    with pytest.raises(InputError, match="unknown rule"):
        load_waivers(("NOPE=x",), ())
    with pytest.raises(InputError, match="empty reason"):
        load_waivers(("FOLDER_NAME=",), ())
    with pytest.raises(InputError, match="no reason"):
        load_waivers(("FOLDER_NAME",), ())
