"""Verdicts, exit codes, waivers, rule selection and internal errors."""

import pytest

from audits import api, registry
from audits.context import AuditOptions
from audits.submission import InputError
from audits.waivers import load_waivers
from support import by_rule, good_folder_files, record_log, write_folder

GOOD = "2026-04-09_Good_Run"


def report(folder, **options):
    return api.audit([str(folder)], AuditOptions(**options))


@pytest.fixture
def warn_only(tmp_path):
    files = good_folder_files(seeds=(42, 314), bpbs=(1.081, 1.0812))  # FEWER_THAN_3_SEEDS: WARN
    return write_folder(tmp_path / GOOD, files)


def test_clean_folder_passes_with_exit_0(tmp_path):
    r = report(write_folder(tmp_path / GOOD, good_folder_files()))
    assert r.submissions[0].verdict() == "PASS" and r.exit_code == 0


def test_warn_exits_0_unless_strict(warn_only):
    assert report(warn_only).exit_code == 0 and report(warn_only).submissions[0].verdict() == "WARN"
    strict = report(warn_only, strict=True)
    assert strict.exit_code == 1 and strict.submissions[0].verdict(True) == "FAIL"


def test_fail_exits_1(tmp_path):
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)
    assert report(write_folder(tmp_path / GOOD, files)).exit_code == 1


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
