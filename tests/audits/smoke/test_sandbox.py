"""The adversarial fixtures: each one is contained at every sandbox level that promises it, and
the tests check the side effect did not happen. Where a level does not promise something, the
test checks that the report says so instead."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import uuid
from pathlib import Path

import pytest
from support import SANDBOXES, processes_with, smoke_processes

from audits.context import AuditOptions
from audits.findings import Severity
from audits.rules.smoke import smoke_import
from audits.smoke import isolation
from audits.smoke.isolation import Sandbox
from audits.smoke.run import Limits

LEVELS = [pytest.param(sandbox, id=level) for level, sandbox in SANDBOXES.items()]
OPTIONS = AuditOptions(smoke=True)
QUICK = Limits(wall_s=30, cpu_s=30)


def smoke(sub, sandbox, limits=QUICK):
    return smoke_import(sub, OPTIONS, sandbox=sandbox, limits=limits)


def only_finding(result):
    assert len(result.findings) == 1, [f.message for f in result.findings]
    return result.findings[0]


@pytest.mark.parametrize("sandbox", LEVELS)
def test_socket_to_a_local_listener_never_connects(sandbox, smoke_folder, listener):
    port, accepted = listener
    result = smoke(smoke_folder("net_connect", port=port), sandbox)
    finding = only_finding(result)
    if sandbox.network_isolated:
        assert accepted() == []
        assert result.outcome == "error" and finding.severity == Severity.WARN
        assert finding.line == 6 and "create_connection" in finding.evidence
    else:  # the level says what it is: the connection went through, and the report says so
        assert accepted() == [b"smoke import got out"]
        assert "NOT isolated: network" in finding.message and finding.confidence == "low"


@pytest.mark.parametrize("sandbox", LEVELS)
def test_writes_outside_the_folder_are_blocked_or_reported(sandbox, smoke_folder):
    name = f"pgolf-smoke-wrote-{uuid.uuid4().hex}"
    sub = smoke_folder("write_outside")
    # The real HOME is a target only where the level promises to protect it: elsewhere the
    # import could really write there.
    folders = [sub.root] + ([Path(os.path.expanduser("~"))] if sandbox.private_filesystem else [])
    (sub.root / "targets.json").write_text(json.dumps({"name": name, "folders": [str(f) for f in folders]}))
    try:
        result = smoke(sub, sandbox)
    finally:
        leaked = [f / name for f in folders if (f / name).exists()]
        for path in leaked:
            path.unlink()
    if sandbox.private_filesystem:
        assert leaked == []
        assert result.folder_changes == []
        assert result.outcome == "pass"  # the fixture raises when any write succeeded
    else:  # the write got through, and the before/after comparison reports it
        assert leaked == [sub.root / name]
        assert result.folder_changes == [name]
        changed = [f for f in result.findings if "changed the original folder" in f.message]
        assert len(changed) == 1 and changed[0].severity == Severity.FAIL


@pytest.mark.parametrize("sandbox", LEVELS)
def test_planted_secrets_are_not_in_the_environment(sandbox, smoke_folder, monkeypatch):
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    names = ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "SSH_AUTH_SOCK", "PGOLF_PLANTED_SECRET"]
    for name in names:
        monkeypatch.setenv(name, secret)
    result = smoke(smoke_folder("read_secrets", names=names, secret=secret), sandbox)
    finding = only_finding(result)
    assert "secrets seen: []" in finding.message
    assert secret not in finding.message + finding.evidence + result.output_tail
    assert f"HOME={os.path.expanduser('~')} " not in finding.message


@pytest.mark.parametrize("sandbox", LEVELS)
def test_fork_bomb_hits_the_process_limit_and_leaves_nothing(sandbox, smoke_folder):
    if not sandbox.process_limit_enforced:
        pytest.skip(f"{sandbox.level} runs as root here and the kernel exempts root from the "
                    "process limit: a fork bomb would exhaust this machine's PIDs")
    result = smoke(smoke_folder("fork_bomb"), sandbox)
    finding = only_finding(result)
    assert "process limit" in finding.message and "BlockingIOError" in finding.message
    assert smoke_processes(result) == []


@pytest.mark.parametrize("sandbox", LEVELS)
def test_allocating_50_gb_hits_the_memory_limit(sandbox, smoke_folder):
    result = smoke(smoke_folder("alloc_50gb"), sandbox)
    finding = only_finding(result)
    assert "memory limit" in finding.message and "MemoryError" in finding.message
    assert finding.line == 2


@pytest.mark.parametrize("sandbox", LEVELS)
def test_allocating_50_gb_through_torch_hits_the_memory_limit(sandbox, smoke_folder):
    finding = only_finding(smoke(smoke_folder("torch_alloc"), sandbox))
    assert "memory limit" in finding.message and finding.line == 4


@pytest.mark.parametrize("sandbox", LEVELS)
def test_a_busy_loop_is_stopped_by_the_cpu_limit(sandbox, smoke_folder):
    finding = only_finding(smoke(smoke_folder("busy_loop"), sandbox, Limits(wall_s=30, cpu_s=1)))
    assert "CPU time limit: CPUTimeLimit" in finding.message and finding.line in (3, 4)  # in the loop


@pytest.mark.parametrize("sandbox", LEVELS)
def test_opening_files_hits_the_open_file_limit(sandbox, smoke_folder):
    finding = only_finding(smoke(smoke_folder("open_files"), sandbox))
    assert "open-file limit" in finding.message and "Too many open files" in finding.message


@pytest.mark.parametrize("sandbox", LEVELS)
def test_sleeping_forever_is_stopped_by_the_wall_clock(sandbox, smoke_folder):
    result = smoke(smoke_folder("sleep_forever"), sandbox, Limits(wall_s=3, cpu_s=30))
    assert result.outcome == "stopped"
    assert "wall-clock limit (3 s)" in only_finding(result).message
    assert smoke_processes(result) == []


@pytest.mark.parametrize("sandbox", LEVELS)
def test_printing_1_gb_hits_the_output_limit(sandbox, smoke_folder):
    result = smoke(smoke_folder("print_1gb"), sandbox, Limits(wall_s=30, cpu_s=30, output_bytes=2**20))
    assert result.outcome == "stopped"  # the parent counted the pipe's bytes: not the 30 s clock
    assert "stopped by the output limit (1 MiB" in only_finding(result).message


@pytest.mark.parametrize("fixture", ["daemon", "setsid"])
@pytest.mark.parametrize("sandbox", LEVELS)
def test_processes_that_leave_the_group_die_with_the_import(sandbox, fixture, smoke_folder):
    marker = f"pgolf-smoke-marker-{uuid.uuid4().hex}"
    result = smoke(smoke_folder(fixture, marker=marker), sandbox)
    survivors = processes_with(marker)
    for pid in survivors:  # clean up, should the assertion below fail
        os.kill(pid, signal.SIGKILL)
    assert result.outcome == "pass"
    assert survivors == []


@pytest.mark.parametrize("sandbox", LEVELS)
def test_a_process_that_hides_its_environment_is_still_killed(sandbox, smoke_folder):
    marker = f"pgolf-smoke-marker-{uuid.uuid4().hex}"
    result = smoke(smoke_folder("exec_clean_env", marker=marker), sandbox, Limits(wall_s=3, cpu_s=30))
    survivors = processes_with(marker)
    for pid in survivors:  # clean up, should the assertion below fail
        os.kill(pid, signal.SIGKILL)
    assert result.outcome == "stopped"
    if sandbox.own_pid_namespace:
        assert survivors == []
    else:  # the forked sleeper left the group and replaced its environment
        assert len(survivors) == 1
        assert "detached processes may survive" in sandbox.describe()


def test_each_gap_of_a_level_is_named_and_the_full_level_names_none():
    """What the verdict lines print (hostile/test_change_attacks.py runs them at this machine's
    levels): one named gap for each bound a level lacks; nothing at the full level."""
    full = Sandbox("bubblewrap", True, True, True, True, isolation.NOBODY, True, True)
    assert full.not_isolated() == [] and full.weaker() is None
    for field, gap in (("network_isolated", "network"), ("private_filesystem", "host files"),
                       ("own_pid_namespace", "other processes"), ("disk_quota", "disk"),
                       ("inode_bound", "inodes"), ("tree_memory", "tree memory")):
        weaker = dataclasses.replace(full, **{field: False})
        assert [text.split(" (")[0] for text in weaker.not_isolated()] == [gap], field
        assert weaker.weaker().startswith(f"sandbox: bubblewrap, NOT isolated: {gap}"), field
