"""The pre-commit hook of .pre-commit-hooks.yaml, run by the real `pre-commit` in a local
repository: a commit adding a failing records folder is stopped, a passing one goes through.

The hook is declared `language: python`, for which pre-commit installs pgolf (and torch) into an
environment of its own from the network. Here it runs as a `repo: local` hook with the same id,
entry, files pattern and options but `language: system`, so `pgolf` is the one under test: a
shim on PATH that runs this checkout. Everything else (the file selection, the names passed, the
exit status stopping the commit) is pre-commit's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from localrepo import GIT_ENV, TRACK, git
from support import good_folder_files, record_log, write_folder

ROOT = Path(__file__).parents[2]
pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(subprocess.run([sys.executable, "-m", "pre_commit", "--version"],
                                      capture_output=True, check=False).returncode != 0,
                       reason="pre-commit is not installed (pip install -e '.[test]')"),
]


def hook_definition() -> dict:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["pgolf-audit"]
    return hooks[0]


def repository(tmp_path: Path) -> tuple[Path, dict]:
    """A repository with pre-commit installed as its git hook, and the environment to commit in."""
    repo = tmp_path / "pg"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    hook = hook_definition()
    assert hook["language"] == "python" and hook["entry"].split()[0] == "pgolf"
    local = {**hook, "language": "system", "args": ["--no-smoke"]}
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "pgolf").write_text(f"#!/bin/sh\nexec {sys.executable} -m pgolf_cli \"$@\"\n")
    (shims / "pgolf").chmod(0o755)
    env = {**GIT_ENV, "HOME": str(tmp_path), "PATH": f"{shims}:{GIT_ENV['PATH']}",
           "PRE_COMMIT_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path[1:]])}
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env, check=True,
                   capture_output=True, timeout=120)
    (repo / "README.md").write_text("# parameter-golf\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "--no-verify", "-m", "base")
    return repo, env


def commit(repo: Path, env: dict, message: str) -> subprocess.CompletedProcess:
    subprocess.run(["git", "add", "."], cwd=repo, env=env, check=True, timeout=60)
    return subprocess.run(["git", "commit", "-m", message], check=False, cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_failing_folder_stops_the_commit_and_a_passing_one_goes_through(tmp_path):
    repo, env = repository(tmp_path)
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)
    write_folder(repo / TRACK / "2026-04-09_Bad_Run", files)
    done = commit(repo, env, "add a run")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert "pgolf audit" in out and "Failed" in out
    assert "FAIL TRAIN_OVER_BUDGET train_seed42.log:" in out
    assert out.count("2026-04-09_Bad_Run\n") == 1  # five files, one audit of their folder
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"

    files["train_seed42.log"] = record_log(42, bpb=1.081)
    write_folder(repo / TRACK / "2026-04-09_Bad_Run", files)
    done = commit(repo, env, "add a run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pgolf audit....." in done.stderr and "Passed" in done.stderr
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "2"


def test_a_commit_outside_records_skips_the_hook(tmp_path):
    repo, env = repository(tmp_path)
    (repo / "notes.md").write_text("notes\n")
    done = commit(repo, env, "notes")
    assert done.returncode == 0 and "(no files to check)Skipped" in done.stdout + done.stderr
