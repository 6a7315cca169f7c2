"""Temporary folders: removed whatever tree is in them, and by a later run when their owner was
killed, never while their owner lives."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from audits.smoke import tempdirs

# Builds a 3,000-deep tree of unwritable folders with links out of it, then removes it with
# remove_tree, in a process of its own (as root, without the capabilities that let root write
# in unwritable folders).
DEEP_TREE = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from audits.smoke import tempdirs
    top = Path(sys.argv[1]) / "tree"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(3000):
        os.mkdir("d", dir_fd=fd)
        os.symlink(sys.argv[2], "out", dir_fd=fd)
        os.symlink(".", "loop", dir_fd=fd)
        with open(os.open("file", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w") as handle:
            handle.write("x")
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.fchmod(fd, 0o500)
        os.close(fd)
        fd = child
    os.fchmod(fd, 0)
    os.close(fd)
    tempdirs.remove_tree(top)
    print("removed" if not top.exists() else "left")
""")


def test_a_deep_unwritable_tree_is_removed_and_links_are_not_followed(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root, and no setpriv to drop the capabilities that ignore modes")
        prefix = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]
    try:
        done = subprocess.run([*prefix, sys.executable, "-c", DEEP_TREE, str(work), str(outside)],
                              capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[3])
    finally:
        # Whatever happened, no 3,000-deep tree outlives the test: pytest's own clean-up of old
        # temporary folders recurses, and would fail on it.
        tempdirs.remove_tree(work)
    assert done.stdout.strip() == "removed", done.stderr[-2000:]
    assert (outside / "keep").read_text() == "kept"


def test_remove_tree_removes_a_link_not_its_target(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "keep").write_text("kept")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    tempdirs.remove_tree(tmp_path / "link")
    assert not (tmp_path / "link").is_symlink()
    assert (tmp_path / "target" / "keep").read_text() == "kept"


def test_a_fifo_in_the_tree_is_removed_without_being_opened(tmp_path):
    (tmp_path / "t" / "a").mkdir(parents=True)
    os.mkfifo(tmp_path / "t" / "a" / "fifo")
    tempdirs.remove_tree(tmp_path / "t")
    assert list(tmp_path.iterdir()) == []


MAKE = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from audits.smoke import tempdirs
    path, fd = tempdirs.make("pgolf-smoke-", parent=Path(sys.argv[1]))
    (path / "work").mkdir()
    print(path, flush=True)
    if sys.argv[2] == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(600)
""")


def test_stale_folders_are_removed_and_live_ones_kept(tmp_path):
    cwd = Path(__file__).parents[3]
    killed = subprocess.run([sys.executable, "-c", MAKE, str(tmp_path), "killed"], capture_output=True,
                            text=True, timeout=120, cwd=cwd)
    assert killed.returncode == -signal.SIGKILL
    stale = Path(killed.stdout.strip())
    live_proc = subprocess.Popen([sys.executable, "-c", MAKE, str(tmp_path), "live"], stdout=subprocess.PIPE,
                                 text=True, cwd=cwd)
    try:
        live = Path(live_proc.stdout.readline().strip())
        other = tmp_path / "pgolf-other"
        other.mkdir()
        assert stale.is_dir() and live.is_dir()
        removed = tempdirs.remove_stale(tmp_path, "pgolf-smoke-*")
        assert removed == [stale]
        assert not stale.exists()
        assert (live / "work").is_dir() and other.is_dir()
    finally:
        live_proc.kill()
        live_proc.wait()
    assert tempdirs.remove_stale(tmp_path, "pgolf-smoke-*") == [live]  # its owner is gone now


def test_release_removes_the_folder(tmp_path):
    path, fd = tempdirs.make("pgolf-smoke-", parent=tmp_path)
    (path / "a" / "b").mkdir(parents=True)
    tempdirs.release(path, fd)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OSError):
        os.fstat(fd)  # the lock's descriptor is closed
