"""Folders written from git's object store: the bytes, modes and links of the commit, and nothing
outside the destination whatever the tree holds."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from audits.submission import InputError
from pgolf_cli import gittree
from prrepos import git
from support import write_folder

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def commit_tree(repo: Path, files: dict[str, str | bytes]) -> str:
    write_folder(repo / "records/t/f", files)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "x")
    return git(repo, "rev-parse", "HEAD")


def test_files_links_and_modes_come_out_as_committed(tmp_path):
    repo = tmp_path / "repo"
    write_folder(repo / "records/t/f", {"a.txt": "alpha\n", "sub/b.bin": bytes(range(256)) * 3,
                                        "run.sh": "#!/bin/sh\n"})
    (repo / "records/t/f/run.sh").chmod(0o755)
    os.symlink("../../../../outside", repo / "records/t/f/link")
    head = commit_tree(repo, {})
    dest = tmp_path / "out"
    assert gittree.extract(repo, head, "records/t/f", dest) == []
    assert (dest / "a.txt").read_text() == "alpha\n"
    assert (dest / "sub/b.bin").read_bytes() == bytes(range(256)) * 3
    assert os.access(dest / "run.sh", os.X_OK) and not os.access(dest / "a.txt", os.X_OK)
    assert os.readlink(dest / "link") == "../../../../outside"  # kept as a link, never followed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "repo"]


def test_a_file_past_the_limit_keeps_its_size_not_its_tail(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    head = commit_tree(repo, {"big.log": "x" * 100})
    monkeypatch.setattr(gittree, "FILE_LIMIT", 10)
    gittree.extract(repo, head, "records/t/f", tmp_path / "out")
    assert (tmp_path / "out/big.log").read_bytes() == b"x" * 10 + b"\0" * 90


def test_over_the_total_limit_is_an_input_error(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    head = commit_tree(repo, {"a": "x" * 60, "b": "y" * 60})
    monkeypatch.setattr(gittree, "TOTAL_LIMIT", 100)
    with pytest.raises(InputError, match="holds over"):
        gittree.extract(repo, head, "records/t/f", tmp_path / "out")


def test_one_entry_past_the_loader_s_limit_is_written(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    head = commit_tree(repo, {f"f{i}.txt": str(i) for i in range(6)})
    monkeypatch.setattr(gittree, "MAX_ENTRIES", 3)
    gittree.extract(repo, head, "records/t/f", tmp_path / "out")
    assert len(list((tmp_path / "out").iterdir())) == 4


def test_a_file_the_clone_lacks_is_named_not_written(tmp_path):
    """As in a partial clone: the commit lists the blob, the object store does not hold it."""
    repo = tmp_path / "repo"
    head = commit_tree(repo, {"model.ptz": b"weights" * 100, "README.md": "# run\n"})
    blob = git(repo, "rev-parse", f"{head}:records/t/f/model.ptz")
    (repo / ".git/objects" / blob[:2] / blob[2:]).unlink()
    assert gittree.extract(repo, head, "records/t/f", tmp_path / "out") == ["model.ptz"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["README.md"]


def _mktree(repo: Path, lines: list[str]) -> str:
    done = subprocess.run(["git", "-C", str(repo), "mktree", "--missing"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _crafted(repo: Path, lines: list[str]) -> str:
    """A commit whose folder `f` is the tree of `lines` (git itself never makes such trees)."""
    folder = _mktree(repo, lines)
    return subprocess.run(["git", "-C", str(repo), "commit-tree", _mktree(repo, [f"040000 tree {folder}\tf"]),
                           "-m", "crafted"], capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}).stdout.strip()


def _blob(repo: Path, data: bytes) -> str:
    return subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=data,
                          capture_output=True, check=True).stdout.decode().strip()


def test_a_path_through_a_link_is_not_written(tmp_path):
    repo = tmp_path / "repo"
    commit_tree(repo, {"keep.txt": "k\n"})
    victim = tmp_path / "victim"
    victim.mkdir()
    inner = _mktree(repo, [f"100644 blob {_blob(repo, b'pwned')}\tpasswd"])
    commit = _crafted(repo, [f"120000 blob {_blob(repo, str(victim).encode())}\tetc", f"040000 tree {inner}\tetc"])
    gittree.extract(repo, commit, "f", tmp_path / "out")
    assert list(victim.iterdir()) == []
    assert os.readlink(tmp_path / "out/etc") == str(victim)


def test_a_name_listed_twice_is_written_once(tmp_path):
    repo = tmp_path / "repo"
    commit_tree(repo, {"keep.txt": "k\n"})
    commit = _crafted(repo, [f"100644 blob {_blob(repo, b'one')}\tdup.txt",
                             f"100644 blob {_blob(repo, b'two')}\tdup.txt"])
    gittree.extract(repo, commit, "f", tmp_path / "out")
    assert (tmp_path / "out/dup.txt").read_bytes() == b"one"
