"""`pgolf audit --smoke` end to end, as a separate process, the way CI and reviewers run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from support import SANDBOXES

PGOLF = [sys.executable, "-c", "from pgolf_cli.main import main; main()"]


def pgolf(*args, env=None):
    return subprocess.run([*PGOLF, *args], capture_output=True, text=True, env=env, timeout=300)


def smoke_findings(report):
    return [f for f in report["submissions"][0]["findings"] if f["rule"].startswith("IMPORT_")]


def test_smoke_is_on_by_default_when_torch_is_installed(smoke_folder):
    sub = smoke_folder("flash_attn_import")
    done = pgolf("audit", str(sub.root), "--only", "IMPORT_FAIL,IMPORT_STUB_LIMIT", "--format", "json")
    assert done.returncode == 0, done.stderr
    (finding,) = smoke_findings(json.loads(done.stdout))
    assert finding["severity"] == "INFO" and finding["message"].startswith("SMOKE_TEST_PASS")
    assert f"[sandbox: {next(iter(SANDBOXES))}" in finding["message"]


def test_no_smoke_skips_the_import(smoke_folder):
    sub = smoke_folder("syntax_error")
    done = pgolf("audit", str(sub.root), "--only", "IMPORT_FAIL", "--no-smoke", "--format", "json")
    assert done.returncode == 0
    assert smoke_findings(json.loads(done.stdout)) == []


def test_a_failing_import_fails_the_audit(smoke_folder):
    sub = smoke_folder("syntax_error")
    done = pgolf("audit", str(sub.root), "--only", "IMPORT_FAIL", "--format", "text")
    assert done.returncode == 1
    assert "FAIL IMPORT_FAIL train_gpt.py:5: the import fails with SyntaxError" in done.stdout


def test_smoke_forward_needs_the_smoke_import(smoke_folder):
    sub = smoke_folder("record")
    done = pgolf("audit", str(sub.root), "--no-smoke", "--smoke-forward")
    assert done.returncode == 2
    assert done.stderr.strip() == "pgolf: --smoke-forward needs the smoke import; drop --no-smoke"


def test_secrets_in_pgolfs_own_environment_stay_out_of_the_report(smoke_folder):
    """Here the secrets are in the environment pgolf itself started with, so they are also in
    /proc/<pgolf>/environ, where a script that can see the host's processes would find them."""
    best = next(iter(SANDBOXES.values()))
    if not best.own_pid_namespace:
        pytest.skip("no PID namespace on this machine: the script would see pgolf's /proc entry")
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    names = ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY"]
    sub = smoke_folder("read_secrets", names=names, secret=secret)
    env = {**os.environ, **{name: secret for name in names}}
    done = pgolf("audit", str(sub.root), "--only", "IMPORT_FAIL", "--format", "json", env=env)
    assert secret not in done.stdout + done.stderr
    (finding,) = smoke_findings(json.loads(done.stdout))
    assert "secrets seen: []" in finding["message"]
