"""The one atomic write: whole files or none, the umask's mode, nothing left beside them."""

from __future__ import annotations

import os

import pytest

from trainer.files import write_atomic


def test_a_written_file_gets_the_mode_the_umask_gives_and_its_folders(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "out" / "report.md", "text\n")
        write_atomic(tmp_path / "out" / "model.pga", b"\x00\xff")
    finally:
        os.umask(old)
    text, blob = tmp_path / "out" / "report.md", tmp_path / "out" / "model.pga"
    assert text.read_text() == "text\n" and blob.read_bytes() == b"\x00\xff"
    assert (text.stat().st_mode & 0o777) == 0o644
    assert sorted(p.name for p in text.parent.iterdir()) == ["model.pga", "report.md"]


def test_a_rewrite_replaces_the_whole_file(tmp_path):
    path = tmp_path / "model.pga"
    write_atomic(path, b"x" * 1000)
    write_atomic(path, b"y")
    assert path.read_bytes() == b"y" and [p.name for p in tmp_path.iterdir()] == ["model.pga"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "model.pga"
    write_atomic(path, b"old")
    with pytest.raises(TypeError):
        write_atomic(path, 12345)  # neither bytes nor text: the write itself fails
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["model.pga"]
    target = tmp_path / "a_folder"
    target.mkdir()
    with pytest.raises(OSError):
        write_atomic(target, b"x")  # the rename onto a folder fails
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_folder", "model.pga"]
