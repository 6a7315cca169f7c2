"""LAYOUT_NOT_SINGLE_FOLDER, FOLDER_NAME, MISSING_FILES and the input-hygiene rules."""

import os
import subprocess

import pytest

from support import audit_findings, by_rule, good_folder_files, write_folder

GOOD = "2026-04-09_Good_Run"


def test_good_folder_is_quiet_on_layout_rules(tmp_path):
    f = audit_findings(write_folder(tmp_path / GOOD, good_folder_files()))
    for rule in ("FOLDER_NAME", "MISSING_FILES", "SYMLINK_OUTSIDE", "BAD_FILENAME", "FILE_UNREADABLE"):
        assert by_rule(f, rule) == [], rule


@pytest.mark.parametrize("name", ["2026_04_16_MyRun", "MyRun", "2026-04-16 My Run", "2026-02-30_bad_date",
                                  "2026-04-16_"])
def test_folder_name_fires(tmp_path, name):
    f = audit_findings(write_folder(tmp_path / name, good_folder_files()))
    assert by_rule(f, "FOLDER_NAME", "WARN"), name


def test_missing_files_names_each_missing_piece(tmp_path):
    f = audit_findings(write_folder(tmp_path / GOOD, {"notes.txt": "hello\n"}))
    messages = " | ".join(x.message for x in by_rule(f, "MISSING_FILES", "FAIL"))
    for piece in ("README.md", "submission.json", "train log", "train_gpt.py"):
        assert piece in messages


def test_non_record_track_accepts_another_entry_script(tmp_path):
    files = good_folder_files()
    files["train_mdlm.py"] = files.pop("train_gpt.py")
    record = audit_findings(write_folder(tmp_path / "records/track_10min_16mb" / GOOD, files))
    non_record = audit_findings(write_folder(tmp_path / "records/track_non_record_16mb" / GOOD, files))
    assert [str(x.severity) for x in by_rule(record, "MISSING_FILES")] == ["WARN"]
    assert "named train_mdlm.py" in by_rule(record, "MISSING_FILES")[0].message
    assert not by_rule(non_record, "MISSING_FILES")


def test_metadata_under_another_name_is_a_warning(tmp_path):
    files = good_folder_files()
    files["submission_ternary.json"] = files.pop("submission.json")
    f = by_rule(audit_findings(write_folder(tmp_path / GOOD, files)), "MISSING_FILES")
    assert [(str(x.severity), x.file) for x in f] == [("WARN", "submission_ternary.json")]


def test_no_train_log_blocks_on_the_record_track_only(tmp_path):
    files = {k: v for k, v in good_folder_files().items() if not k.endswith(".log")}
    record = audit_findings(write_folder(tmp_path / "records/track_10min_16mb" / GOOD, files))
    non_record = audit_findings(write_folder(tmp_path / "records/track_non_record_16mb" / GOOD, files))
    assert [str(x.severity) for x in by_rule(record, "MISSING_FILES")] == ["FAIL"]
    assert [str(x.severity) for x in by_rule(non_record, "MISSING_FILES")] == ["WARN"]


def test_symlink_outside_fails_and_is_not_followed(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=abc\n")
    folder = write_folder(tmp_path / GOOD, good_folder_files())
    os.symlink(secret, folder / "train_extra.log")
    f = audit_findings(folder)
    assert by_rule(f, "SYMLINK_OUTSIDE", "FAIL")[0].file == "train_extra.log"
    assert all("TOKEN" not in x.evidence for x in f)


def test_filename_with_newline_is_reported_escaped(tmp_path):
    folder = write_folder(tmp_path / GOOD, {**good_folder_files(), "bad\nname.txt": "x"})
    found = by_rule(audit_findings(folder), "BAD_FILENAME", "WARN")
    assert found and "\n" not in found[0].message and "\\n" in found[0].message


def test_binary_and_oversized_logs_are_findings_not_crashes(tmp_path):
    folder = write_folder(tmp_path / GOOD, {**good_folder_files(), "train_bin.log": b"\x00\x01" * 5000})
    with open(folder / "train_huge.log", "wb") as handle:  # sparse: 2 GB without using the disk
        handle.truncate(2 * 1024**3)
    f = by_rule(audit_findings(folder), "FILE_UNREADABLE")
    assert {x.file for x in f} >= {"train_bin.log", "train_huge.log"}


def test_invalid_utf8_in_a_log_is_noted_and_the_log_still_read(tmp_path):
    files = good_folder_files()
    files["train_seed42.log"] = files["train_seed42.log"].encode() + b"\xff\xfe broken\n"
    f = audit_findings(write_folder(tmp_path / GOOD, files))
    assert by_rule(f, "FILE_UNREADABLE", "INFO") and not by_rule(f, "FEWER_THAN_3_SEEDS", "WARN")


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    write_folder(repo, {"README.md": "# challenge\n",
                        "records/track_10min_16mb/2026-03-17_Old/README.md": "old\n"})
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-qb", "pr")
    return repo


def test_base_diff_with_one_new_folder_is_clean(repo):
    write_folder(repo / "records/track_10min_16mb" / GOOD, good_folder_files())
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "add")
    f = audit_findings(repo, base_ref="main")
    assert by_rule(f, "LAYOUT_NOT_SINGLE_FOLDER") == []


def test_base_diff_touching_other_files_fails_with_each_path(repo):
    write_folder(repo / "records/track_10min_16mb" / GOOD, good_folder_files())
    (repo / "README.md").write_text("changed\n")
    (repo / "records/track_10min_16mb/2026-03-17_Old/README.md").unlink()
    write_folder(repo / "records/track_10min_16mb/2026-04-10_Second", {"README.md": "x\n"})
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "messy")
    from audits import api
    from audits.context import AuditOptions
    report = api.audit([str(repo)], AuditOptions(base_ref="main"))
    assert len(report.submissions) == 2  # both added folders are audited
    messages = " | ".join(x.message for x in by_rule(report.submissions[0].findings,
                                                      "LAYOUT_NOT_SINGLE_FOLDER", "FAIL"))
    assert "2 records folders" in messages
    assert "modifies README.md" in messages
    assert "deletes records/track_10min_16mb/2026-03-17_Old/README.md" in messages


def test_a_branch_sharing_no_history_with_the_base_is_read_against_the_base(repo):
    """A PR pushed from a fresh repository has no merge base: its change is what its tree holds
    that the base's does not (here, one new folder beside a copy of the base's files)."""
    _git(repo, "checkout", "-q", "--orphan", "fresh")
    write_folder(repo / "records/track_10min_16mb" / GOOD, good_folder_files())
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "unrelated history")
    f = audit_findings(repo, base_ref="main")
    assert by_rule(f, "LAYOUT_NOT_SINGLE_FOLDER") == []


def test_base_diff_without_any_records_folder(repo):
    (repo / "README.md").write_text("changed\n")
    _git(repo, "commit", "-qam", "only readme")
    f = audit_findings(repo, base_ref="main")
    assert any("adds no folder" in x.message for x in by_rule(f, "LAYOUT_NOT_SINGLE_FOLDER", "FAIL"))


def test_base_on_a_non_repository_is_an_input_error(tmp_path):
    from audits.submission import InputError
    with pytest.raises(InputError, match="git"):
        audit_findings(write_folder(tmp_path / "plain", {"a.txt": "x"}), base_ref="main")


def _changes(*lines):
    from audits.submission.gitdiff import parse_changes
    return tuple(parse_changes("\n".join(lines), "test"))


def test_changed_paths_list_places_the_folder_and_finds_outside_files(tmp_path):
    folder = write_folder(tmp_path / "copy", good_folder_files())  # a copy under another name
    own = "records/track_non_record_16mb/" + GOOD
    changes = _changes(*(f"A\t{own}/{rel}" for rel in good_folder_files()), "M\ttrain_gpt.py",
                       "A scripts/make data.py", "R100\tdata/old.txt\tdata/new.txt")
    from audits import api
    from audits.context import AuditOptions
    sub = api.audit([str(folder)], AuditOptions(changed_files=changes)).submissions[0]
    assert (sub.submission.repo_rel, sub.submission.name, sub.submission.track) == (own, GOOD, "non_record_16mb")
    fails = by_rule(sub.findings, "LAYOUT_NOT_SINGLE_FOLDER", "FAIL")
    assert sorted(x.evidence for x in fails) == ["A\tdata/new.txt", "A\tscripts/make data.py",
                                                 "D\tdata/old.txt", "M\ttrain_gpt.py"]


def test_changed_paths_with_only_the_folder_are_clean(tmp_path):
    folder = write_folder(tmp_path / GOOD, good_folder_files())
    changes = _changes(*(f"records/track_10min_16mb/{GOOD}/{rel}" for rel in good_folder_files()))
    assert by_rule(audit_findings(folder, changed_files=changes), "LAYOUT_NOT_SINGLE_FOLDER") == []


def test_a_folder_under_another_root_is_one_finding(tmp_path):
    folder = write_folder(tmp_path / GOOD, good_folder_files())
    changes = _changes(*(f"mine/records/track_10min_16mb/{GOOD}/{rel}" for rel in good_folder_files()))
    fails = by_rule(audit_findings(folder, changed_files=changes), "LAYOUT_NOT_SINGLE_FOLDER", "FAIL")
    assert [x.file for x in fails] == [f"mine/records/track_10min_16mb/{GOOD}"]


@pytest.mark.parametrize("dates, severity", [(("2026-03-18", "2026-03-19"), "WARN"),
                                             (("2026-03-19", "2026-03-24"), "FAIL"),
                                             (("2026-04-09", "2026-04-10"), "FAIL")])
def test_bundled_records_folders_are_warned_only_in_the_launch_days(tmp_path, dates, severity):
    names = [f"{d}_Run{i}" for i, d in enumerate(dates)]
    folder = write_folder(tmp_path / names[0], good_folder_files())
    changes = _changes(*(f"A\trecords/track_10min_16mb/{n}/{rel}" for n in names for rel in good_folder_files()))
    found = by_rule(audit_findings(folder, changed_files=changes), "LAYOUT_NOT_SINGLE_FOLDER")
    assert [str(x.severity) for x in found] == [severity] and "2 records folders" in found[0].message


def test_launch_days_do_not_excuse_files_outside_the_records_folders(tmp_path):
    names = ["2026-03-18_A", "2026-03-19_B"]
    folder = write_folder(tmp_path / names[0], good_folder_files())
    changes = _changes(*(f"records/track_10min_16mb/{n}/{rel}" for n in names for rel in good_folder_files()),
                       "notes/plan.md")
    found = by_rule(audit_findings(folder, changed_files=changes), "LAYOUT_NOT_SINGLE_FOLDER")
    assert sorted(str(x.severity) for x in found) == ["FAIL", "WARN"]


@pytest.mark.parametrize("text, message", [("A\t../outside.txt", "line 1: '../outside.txt' leaves"),
                                           ("ok.txt\n/etc/passwd", "line 2: '/etc/passwd' is absolute"),
                                           ("A\tbad\x01name", "line 1: a path with a control")])
def test_changed_paths_list_rejects_bad_lines(text, message):
    from audits.submission import InputError
    from audits.submission.gitdiff import parse_changes
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        parse_changes(text, "list")
