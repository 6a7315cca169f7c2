"""The smoke import's output and report at every sandbox level: read through the parent's own
pipes, believed only with the run's nonce, bounded in size and time; the sandbox area has a disk
quota where the level says so, and nothing is left in the temporary directory."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from support import SANDBOXES

from audits import catalogue, submission  # noqa: F401  (catalogue registers the rules findings name)
from audits.context import AuditOptions
from audits.rules.smoke import smoke_import
from audits.smoke import tempdirs
from audits.smoke.run import Limits

LEVELS = [pytest.param(sandbox, id=level) for level, sandbox in SANDBOXES.items()]
HOSTILE = Path(__file__).parents[2] / "hostile"
QUICK = Limits(wall_s=30, cpu_s=30)


@pytest.fixture
def own_tmpdir(tmp_path, monkeypatch):
    """A TMPDIR of the test's own, to see what the import leaves there."""
    folder = tmp_path / "tmpdir"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def hostile(tmp_path: Path, attack: str, secret_file: Path | None = None) -> submission.Submission:
    folder = tmp_path / "records" / f"2026-01-01_{attack}"
    shutil.copytree(HOSTILE / attack, folder)
    (folder / "targets.json").write_text(json.dumps({"secret_file": str(secret_file or tmp_path / "none")}))
    return submission.load(folder)


def smoke(sub, sandbox, limits=QUICK):
    return smoke_import(sub, AuditOptions(smoke=True), sandbox=sandbox, limits=limits)


@pytest.mark.parametrize("sandbox", LEVELS)
def test_a_forged_report_is_never_a_pass(sandbox, tmp_path, own_tmpdir):
    for attack in ("forged_report", "forged_report_then_pass"):
        result = smoke(hostile(tmp_path / attack, attack), sandbox)
        assert result.outcome == "stopped", attack
        assert result.stopped_by == "the process ending with status 0 without a valid report"
        assert result.dims == {}
    assert list(own_tmpdir.iterdir()) == []


@pytest.mark.parametrize("sandbox", LEVELS)
def test_links_at_output_paths_are_never_read(sandbox, tmp_path, own_tmpdir, monkeypatch):
    secret = "sekrit-environ-1f3a"
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    secret_file = tmp_path / "secret"
    secret_file.write_text("sekrit-file-77c2")
    result = smoke(hostile(tmp_path, "link_outputs_to_secrets", secret_file), sandbox)
    assert result.outcome == "stopped" and "status 3" in result.stopped_by
    text = json.dumps([f.message + f.evidence for f in result.findings]) + result.output_tail
    assert secret not in text and "sekrit-file" not in text
    assert list(own_tmpdir.iterdir()) == []


@pytest.mark.parametrize("sandbox", LEVELS)
def test_fifos_at_output_paths_do_not_block(sandbox, tmp_path, own_tmpdir):
    result = smoke(hostile(tmp_path, "fifo_outputs"), sandbox)
    assert result.outcome == "stopped"
    assert list(own_tmpdir.iterdir()) == []


@pytest.mark.parametrize("sandbox", LEVELS)
def test_a_fifo_in_the_folder_is_not_copied(sandbox, tmp_path, smoke_folder, own_tmpdir):
    sub = smoke_folder("sibling_import")
    os.mkfifo(sub.root / "pipe.bin")
    result = smoke(sub, sandbox)
    assert result.outcome == "pass", result.error
    assert list(own_tmpdir.iterdir()) == []


@pytest.mark.parametrize("sandbox", LEVELS)
def test_a_daemon_holding_the_pipes_ends_with_the_import(sandbox, tmp_path, own_tmpdir):
    result = smoke(hostile(tmp_path, "daemon_keeps_pipes"), sandbox)
    assert result.outcome == "pass", (result.stopped_by, result.error)


@pytest.mark.parametrize("sandbox", LEVELS)
def test_the_disk_quota_holds_where_the_level_has_one(sandbox, tmp_path, own_tmpdir):
    if not sandbox.disk_quota:
        pytest.skip(f"{sandbox.level} writes the copy to the host's disk, limited per file only")
    result = smoke(hostile(tmp_path, "fill_disk"), sandbox, Limits(wall_s=60, cpu_s=60, disk_bytes=64 * 2**20))
    message = result.error["message"]
    assert "No space left on device" in message
    assert 0 < int(message.split("wrote ")[1].split(" MiB")[0]) <= 64
    assert list(own_tmpdir.iterdir()) == []


@pytest.mark.parametrize("sandbox", LEVELS)
def test_a_deep_tree_in_the_copy_is_cleaned_up(sandbox, tmp_path, own_tmpdir):
    result = smoke(hostile(tmp_path, "deep_tree"), sandbox)
    assert result.outcome == "pass", (result.stopped_by, result.error)
    assert list(own_tmpdir.iterdir()) == []


def test_a_killed_runs_folder_is_removed_at_the_next_start(smoke_folder, own_tmpdir):
    stale = own_tmpdir / "pgolf-smoke-left.flock"
    (stale / "area" / "deep").mkdir(parents=True)  # nobody holds its lock
    older = own_tmpdir / "pgolf-smoke-older"  # an older pgolf's, which takes no lock: maybe at work
    older.mkdir()
    live, lock = tempdirs.make("pgolf-smoke-", suffix=".flock", parent=own_tmpdir)
    try:
        result = smoke_import(smoke_folder("sibling_import"), AuditOptions(smoke=True), limits=QUICK)
        assert result.outcome == "pass"
        assert sorted(own_tmpdir.iterdir()) == sorted([live, older])
    finally:
        tempdirs.release(live, lock)
