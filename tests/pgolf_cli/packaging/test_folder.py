"""Replacing a records folder: killed at every step that changes the disk, `pgolf package` leaves
the target either the old folder or the new one (with one exchange; with two renames, a SIGKILL
between them leaves the old folder aside, and the next run puts it back), and the next run
leaves no staging directory."""

from __future__ import annotations

import datetime
import os
import shutil
import signal
import sys
import traceback

import pytest

import runfolders
from pgolf_cli.packaging import PackageRequest, folder, package

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT
_STEPS = {"os.rename", "os.mkdir", "os.rmdir", "os.remove", "os.chmod", "tempfile.mkdtemp"}


def _changes_disk(event: str, args: tuple) -> bool:
    if event == "open":
        mode, flags = args[1], args[2]
        return (any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & _WRITE_FLAGS))
    return event in _STEPS


def _package_killed_at(step: int, sig: int, request: PackageRequest, exchange: bool) -> int | None:
    """Run `package` in a forked process that sends itself `sig` just before its `step`-th change
    to the disk; return its wait status, or None when it finished before that step."""
    pid = os.fork()
    if pid == 0:
        try:
            count = 0

            def hook(event, args):
                nonlocal count
                if _changes_disk(event, args):
                    count += 1
                    if count == step:
                        os.kill(os.getpid(), sig)

            if not exchange:  # a system or filesystem without renameat2
                folder._exchange = lambda a, b: False
            sys.addaudithook(hook)
            package(request)
            os._exit(0 if count < step else 3)
        except SystemExit:  # SIGTERM, unwinding
            os._exit(5)
        except BaseException:
            traceback.print_exc()
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    return None if os.waitstatus_to_exitcode(status) == 0 else status


@pytest.mark.slow
@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two_renames"])
def test_a_kill_at_any_step_leaves_the_old_folder_or_the_new_one(tmp_path, exchange):
    runs = runfolders.write_runs(tmp_path / "runs")
    request = PackageRequest(runs=tuple(runs), name="SP8192 legal TTT", author="Ada Lovelace",
                             github_id="ada", out=tmp_path / "records", date=datetime.date(2026, 4, 9),
                             force=True, track="10min_16mb")
    target = request.target
    new_files = sorted(p.name for p in package(request).folder.iterdir())
    for sig in (signal.SIGKILL, signal.SIGTERM):
        step = 0
        while True:
            step += 1
            shutil.rmtree(target)
            target.mkdir()
            (target / "old.txt").write_text("the folder before")
            status = _package_killed_at(step, sig, request, exchange)
            if status is None:
                break
            ended_by_signal = os.WIFSIGNALED(status) and os.WTERMSIG(status) == sig
            unwound = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 5
            assert ended_by_signal or unwound, (sig, step, status)
            files = sorted(p.name for p in target.iterdir()) if target.is_dir() else None
            if files is None:  # killed between the two renames: only where there is no exchange
                assert not exchange and sig == signal.SIGKILL, (sig, step)
            else:
                assert files in (["old.txt"], new_files), (sig, step, files)
            staging = [p.name for p in target.parent.iterdir() if p.name.startswith(".")]
            if unwound:
                assert staging == [], (step, staging)  # removed on the way out
            folder.recover(target)
            assert sorted(p.name for p in target.iterdir()) == (files or ["old.txt"])
            assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == []
        assert sorted(p.name for p in target.iterdir()) == new_files
        assert step > 10  # the steps were counted: the run changes the disk more than that
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_a_target_caught_aside_by_a_kill_is_put_back(tmp_path):
    target = tmp_path / "records" / "2026-04-09_x"
    (tmp_path / "records").mkdir()
    staging = tmp_path / "records" / ".2026-04-09_x.abc.pgolf-staging"
    (staging / "replaced").mkdir(parents=True)
    (staging / "replaced" / "old.txt").write_text("the folder before")
    (staging / "2026-04-09_x").mkdir()  # the new folder, not moved yet
    folder.recover(target)
    assert [p.name for p in target.iterdir()] == ["old.txt"]
    assert [p.name for p in (tmp_path / "records").iterdir()] == ["2026-04-09_x"]
