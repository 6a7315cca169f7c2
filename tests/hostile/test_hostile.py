"""Hostile submissions through `pgolf audit` and `pgolf review`, each in a separate process with a
time limit, checked from outside: no secret in any output, nothing written outside the copy, no
process left, no temporary folder left, exit 0/1/2 with at most one line on stderr, bounded
time and memory. The attacks on the sandbox's bounds also go, as PR 1 of a challenge repository,
through `pgolf review --pr` and the Action's command (changes.py), checked the same way.

Each folder here is one attack, a train_gpt.py that reads targets.json (what it aims at: here a
secret file in the caller's HOME). pgolf runs with a planted GITHUB_TOKEN, a HOME that holds a
secret file, and a TMPDIR of its own, under `reaper.py`, which collects every process it leaves.
The suite runs in the best sandbox this machine has, as CI and reviewers would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from changes import FOLDER, MEMORY_LIMIT_KIB, Change
from support import SANDBOXES

from audits.smoke import isolation, snapshot

HERE = Path(__file__).parent
BEST = next(iter(SANDBOXES.values()))
PGOLF = [sys.executable, "-c", "from pgolf_cli.main import main; main()"]
TIME_LIMIT_S = 400  # generous: the smoke import's own wall-clock limit is 120 s


class Run:
    """One hostile folder and the world pgolf runs in: a HOME with a secret, a TMPDIR, a cwd."""

    def __init__(self, tmp_path: Path, attack: str):
        self.token = f"sekrit-token-{uuid.uuid4().hex}"
        self.file_secret = f"sekrit-file-{uuid.uuid4().hex}"
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.secret_file = self.home / ".netrc"
        self.secret_file.write_text(f"machine github.com password {self.file_secret}\n")
        self.tmpdir = tmp_path / "tmpdir"
        self.tmpdir.mkdir()
        self.cwd = tmp_path / "cwd"
        self.cwd.mkdir()
        self.folder = tmp_path / "records" / f"2026-01-01_{attack}"
        shutil.copytree(HERE / attack, self.folder)
        (self.folder / "targets.json").write_text(json.dumps({"secret_file": str(self.secret_file)}))
        self.result = tmp_path / "reaper.json"

    def env(self) -> dict[str, str]:
        return {**os.environ, "GITHUB_TOKEN": self.token, "HOME": str(self.home), "TMPDIR": str(self.tmpdir)}

    def pgolf(self, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
        done = subprocess.run([sys.executable, str(HERE / "reaper.py"), str(self.result), str(TIME_LIMIT_S),
                               *PGOLF, *args], cwd=self.cwd, env=self.env(), capture_output=True,
                              timeout=TIME_LIMIT_S + 60)
        return done, json.loads(self.result.read_text())

    def check_contained(self, done: subprocess.CompletedProcess, reaped: dict, before: dict) -> None:
        output = done.stdout + done.stderr
        assert self.token.encode() not in output
        assert self.file_secret.encode() not in output
        assert reaped["returncode"] in (0, 1, 2), done.stderr[-2000:]
        assert len(done.stderr.strip().splitlines()) <= 1, done.stderr[-2000:]
        assert reaped["leftovers"] == []
        assert reaped["max_rss_kib"] < MEMORY_LIMIT_KIB
        assert list(self.tmpdir.iterdir()) == []  # no pgolf-smoke-* folder, nothing else
        assert list(self.cwd.iterdir()) == []
        assert sorted(p.name for p in self.home.iterdir()) == [".netrc"]
        assert snapshot.folder_state(self.folder, 2**30) == before


def audit_and_review(tmp_path: Path, attack: str) -> tuple[Run, dict, str]:
    """Run `pgolf audit --format json` and `pgolf review` on the attack; check containment after
    each; return the JSON report's smoke finding messages and the review."""
    run = Run(tmp_path, attack)
    before = snapshot.folder_state(run.folder, 2**30)
    done, reaped = run.pgolf("audit", str(run.folder), "--format", "json")
    run.check_contained(done, reaped, before)
    report = json.loads(done.stdout)
    findings = [f for f in report["submissions"][0]["findings"] if f["rule"].startswith("IMPORT_")]
    done, reaped = run.pgolf("review", str(run.folder))
    run.check_contained(done, reaped, before)
    return run, findings, done.stdout.decode()


def pr_of(tmp_path: Path, attack: str) -> Change:
    """The attack as PR 1 of a challenge repository (changes.py)."""
    place = tmp_path / "pr"
    place.mkdir()
    files = {f"{FOLDER}/{path.relative_to(HERE / attack)}": path.read_bytes()
             for path in sorted((HERE / attack).rglob("*")) if path.is_file()}
    # the secret file Change writes in the HOME it gives pgolf
    files[f"{FOLDER}/targets.json"] = json.dumps({"secret_file": str(place / "home" / ".netrc")})
    return Change(place, files)


def on_a_pr(tmp_path: Path, attack: str) -> dict[str, str]:
    """The attack through `review --pr` and the Action's command, each checked for containment:
    the review, and the Action's smoke annotation."""
    change = pr_of(tmp_path, attack)
    review = change.run("review --pr", "--smoke").stdout
    (annotation,) = [line for line in change.run("action", "--smoke").stdout.splitlines()
                     if "title=pgolf IMPORT_FAIL" in line]
    return {"review --pr": review, "action": annotation}


def smoke_message(findings) -> str:
    (finding,) = [f for f in findings if f["rule"] == "IMPORT_FAIL"]
    return finding["message"] + " " + (finding.get("evidence") or "")


def test_links_from_the_outputs_to_secrets_reveal_nothing(tmp_path):
    run, findings, review = audit_and_review(tmp_path, "link_outputs_to_secrets")
    message = smoke_message(findings)
    assert "stopped by the process ending with status 3" in message
    assert "SMOKE_TEST_PASS" not in message + review


def test_fifos_planted_at_output_paths_do_not_hang(tmp_path):
    run, findings, review = audit_and_review(tmp_path, "fifo_outputs")
    assert "stopped by the process ending with status 0 without a valid report" in smoke_message(findings)


def test_a_forged_report_is_not_a_pass(tmp_path):
    run, findings, review = audit_and_review(tmp_path, "forged_report")
    message = smoke_message(findings)
    assert "SMOKE_TEST_PASS" not in message + review
    assert "without a valid report" in message
    assert "9999" not in message  # the forged dimensions


def test_a_forgery_before_a_real_report_is_not_a_pass(tmp_path):
    run, findings, review = audit_and_review(tmp_path, "forged_report_then_pass")
    assert "SMOKE_TEST_PASS" not in smoke_message(findings) + review
    assert "without a valid report" in smoke_message(findings)


def test_environments_and_home_files_are_out_of_reach(tmp_path):
    if not BEST.private_filesystem:
        pytest.skip(f"the best sandbox here ({BEST.level}) shows the host's files, HOME included")
    run, findings, review = audit_and_review(tmp_path, "proc_environ")
    assert "RuntimeError: found:" in smoke_message(findings)


def test_a_report_with_the_nonce_and_wrongly_typed_fields_is_no_report(tmp_path):
    run, findings, review = audit_and_review(tmp_path, "typed_report")
    for text in (smoke_message(findings), review, *on_a_pr(tmp_path, "typed_report").values()):
        assert "stopped by the process ending with status 0 without a valid report" in text, text


def test_a_3000_deep_unwritable_tree_is_cleaned_up(tmp_path):
    run, findings, review = audit_and_review(tmp_path, "deep_tree")
    assert "SMOKE_TEST_PASS" in smoke_message(findings)


def test_filling_the_disk_stops_at_the_quota(tmp_path):
    if not BEST.disk_quota:
        pytest.skip(f"the best sandbox here ({BEST.level}) has no disk quota: this would fill the disk")
    run, findings, review = audit_and_review(tmp_path, "fill_disk")
    message = smoke_message(findings)
    assert "No space left on device" in message
    written = int(message.split("wrote ")[1].split(" MiB")[0])
    assert 0 < written <= 512  # the default disk limit


def test_every_writable_mount_is_sized(tmp_path):
    """/dev/shm and /tmp hold no more than the sandbox's disk limit each, and /dev nothing (an
    unsized tmpfs holds what memory allows); at the level without a private filesystem the tag says
    so."""
    if not BEST.disk_quota:
        pytest.skip(f"the best sandbox here ({BEST.level}) has no disk quota: this would fill the disk")
    run, findings, review = audit_and_review(tmp_path, "fill_shm")
    for message in (smoke_message(findings), *on_a_pr(tmp_path, "fill_shm").values()):
        written = dict(re.findall(r"(/[\w/]+): (\d+) MiB", message))  # 0 where nobody may write
        assert sorted(written) == ["/dev", "/dev/shm", "/tmp"], message
        assert int(written["/dev/shm"]) <= 512, message
        if BEST.private_filesystem:
            assert int(written["/tmp"]) <= 512 and int(written["/dev"]) == 0, message
        else:
            assert "NOT isolated: host files" in message
    if not BEST.private_filesystem:
        assert "NOT isolated" in review


def test_forks_beyond_a_small_count_are_refused(tmp_path):
    """Without a cgroup memory is bounded per process: the tree is bounded by refusing forks past a
    small count (each fork may hold the whole per-process limit)."""
    if not BEST.process_limit_enforced:
        pytest.skip(f"the best sandbox here ({BEST.level}) runs as root, whom no process limit binds")
    run, findings, review = audit_and_review(tmp_path, "fork_memory")
    for message in (smoke_message(findings), review, *on_a_pr(tmp_path, "fork_memory").values()):
        forked = int(re.search(r"forked (\d+)", message).group(1))
        assert forked < 8 and "Resource temporarily unavailable" in message, message


def test_empty_folders_stop_at_the_inode_bound(tmp_path):
    """Every writable tmpfs holds at most INODES files and folders (once, empty folders took 3 GB
    of kernel memory beside a 512 MiB disk limit)."""
    if not BEST.inode_bound:
        pytest.skip(f"the best sandbox here ({BEST.level}) bounds no inodes: this would make a million folders")
    run, findings, review = audit_and_review(tmp_path, "empty_dirs")
    for message in (smoke_message(findings), *on_a_pr(tmp_path, "empty_dirs").values()):
        made = {place: int(count) for place, count in re.findall(r"(\.|/[\w/]+): (\d+) \(", message)}
        assert sorted(made) == [".", "/dev/shm", "/tmp"], message
        assert 0 < made["."] <= isolation.INODES and "No space left on device" in message, message
        assert made["/tmp"] <= isolation.INODES and made["/dev/shm"] <= isolation.INODES, message


def test_forks_filling_memory_stop_at_the_trees_limit(tmp_path):
    """Six forks of 768 MiB each: where a cgroup bounds the tree, the kernel stops them at the
    4 GiB the report states for the whole tree (once, six forks held 6.3 GB under a 4 GiB limit
    a process)."""
    if not BEST.tree_memory:
        pytest.skip("no cgroup v2 with the memory controller that pgolf may write here: memory is bounded "
                    "per process, the tree by the process count (test_forks_beyond_a_small_count_are_refused)")
    run, findings, review = audit_and_review(tmp_path, "tree_memory")
    message = smoke_message(findings)
    assert "stopped by the memory limit of the whole process tree (4 GiB)" in message, message
    held = [int(n) for n in re.findall(r"the tree holds (\d+) MiB", message)]
    assert held and max(held) <= 4096, message  # 6 x 768 = 4608 MiB, had nothing stopped it
    for text in (review, *on_a_pr(tmp_path, "tree_memory").values()):
        assert "stopped by the memory limit of the whole process tree (4 GiB)" in text, text


def test_a_daemon_holding_the_pipes_does_not_hold_pgolf(tmp_path):
    run, findings, review = audit_and_review(tmp_path, "daemon_keeps_pipes")
    assert "SMOKE_TEST_PASS" in smoke_message(findings)


@pytest.mark.slow
def test_escape_sequences_and_markdown_in_an_exception_come_out_inert(tmp_path):
    run, findings, review = audit_and_review(tmp_path, "injection")
    assert "RuntimeError" in smoke_message(findings)
    before = snapshot.folder_state(run.folder, 2**30)
    outputs = {}
    for fmt in ("rich", "text", "markdown", "github", "json", "sarif"):
        done, reaped = run.pgolf("audit", str(run.folder), "--format", fmt)
        run.check_contained(done, reaped, before)
        outputs[fmt] = done.stdout.decode()
    outputs["review"] = review
    outputs.update(on_a_pr(tmp_path, "injection"))
    for fmt, text in outputs.items():
        assert not any(ch in text for ch in "\x1b\x07\u202e"), fmt
        assert "Verdict: CLEAN" in text, fmt  # shown, as text
    assert "\\x1b]52;c;" in outputs["text"]
    for fmt in ("rich", "text", "action"):  # one line per finding: nothing the script wrote starts a line
        assert not re.search(r"(?m)^#+ Verdict", outputs[fmt]), fmt
    for fmt in ("markdown", "review", "review --pr"):
        text = re.sub(r"(?ms)^(`{3,})$.*?^\1$", "", outputs[fmt])  # fenced blocks show text as it is
        assert "Verdict: CLEAN" in text, fmt
        assert not re.search(r"(?m)^#+ Verdict", text), fmt
        for construct in (r"!\[ok\]", r"\[details\]\(", r"<img", r"\*\*pgolf review: PASS\*\*"):
            assert not re.search(r"(?<!\\)" + construct, text), (fmt, construct)
        assert "@octocat" not in text, fmt  # an invisible joiner after the @: no mention


def test_the_whole_audit_stops_at_its_time_limit(tmp_path):
    """The script sleeps through the import: with a time limit shorter than the import's own, the
    audit and the review (of the folder, of the PR, and the Action's) stop in the smoke check,
    report what ran before, name what did not, and leave nothing behind."""
    run = Run(tmp_path, "hang")
    before = snapshot.folder_state(run.folder, 2**30)
    done, reaped = run.pgolf("audit", str(run.folder), "--format", "json", "--time-limit", "5")
    run.check_contained(done, reaped, before)
    (sub,) = json.loads(done.stdout)["submissions"]
    (limit,) = [f for f in sub["findings"] if f["rule"] == "AUDIT_TIME_LIMIT"]
    assert "stopped at its 5 s time limit in the check of IMPORT_FAIL" in limit["message"]
    assert sub["verdict"] == "NEEDS_ACTION" and reaped["returncode"] == 1
    assert any(f["rule"] == "MISSING_FILES" for f in sub["findings"])  # made before the limit
    done, reaped = run.pgolf("review", str(run.folder), "--time-limit", "5")
    run.check_contained(done, reaped, before)
    assert "AUDIT_TIME_LIMIT" in done.stdout.decode() and reaped["returncode"] == 1
    change = pr_of(tmp_path, "hang")
    for command in ("review --pr", "action"):
        done = change.run(command, "--smoke", "--time-limit", "5")
        assert "stopped at its 5 s time limit in the check of IMPORT_FAIL" in done.stdout, command
        assert done.returncode == 1, command


def _signal_during_the_import(run: Run, sig: int) -> tuple[bytes, dict]:
    """Start `pgolf audit` on the attack, send `sig` to pgolf once the import runs; return its
    output and what the reaper found."""
    proc = subprocess.Popen([sys.executable, str(HERE / "reaper.py"), str(run.result), str(TIME_LIMIT_S),
                             *PGOLF, "audit", str(run.folder)], cwd=run.cwd, env=run.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pgolf = _wait_for_child_of(proc.pid, TIME_LIMIT_S)
    _wait_for(lambda: any(run.tmpdir.glob("pgolf-smoke-*/area")), TIME_LIMIT_S)
    os.kill(pgolf, sig)
    stdout, stderr = proc.communicate(timeout=TIME_LIMIT_S)
    return stdout + stderr, json.loads(run.result.read_text())


def test_sigterm_during_the_import_leaves_nothing(tmp_path):
    """pgolf is terminated while the script sleeps: the child dies with it and the temporary
    folder goes."""
    run = Run(tmp_path, "hang")
    output, reaped = _signal_during_the_import(run, signal.SIGTERM)
    assert reaped["returncode"] == 128 + signal.SIGTERM
    assert reaped["leftovers"] == []
    assert list(run.tmpdir.iterdir()) == []
    assert run.token.encode() not in output


def test_a_sigkilled_runs_folder_goes_with_the_next_run(tmp_path):
    """pgolf is killed while the script sleeps: its temporary folder stays, with no lock held, and
    the next audit removes it."""
    run = Run(tmp_path, "hang")
    output, reaped = _signal_during_the_import(run, signal.SIGKILL)
    assert reaped["returncode"] == -signal.SIGKILL
    if BEST.level == "bubblewrap":  # --die-with-parent; elsewhere the child outlives a SIGKILLed pgolf
        assert reaped["leftovers"] == []
    assert [p.name.startswith("pgolf-smoke-") for p in run.tmpdir.iterdir()] == [True]
    shutil.copytree(HERE / "daemon_keeps_pipes", run.folder, dirs_exist_ok=True)  # one that ends
    done, reaped = run.pgolf("audit", str(run.folder))
    assert reaped["returncode"] in (0, 1), done.stderr[-2000:]
    assert list(run.tmpdir.iterdir()) == []


def _wait_for_child_of(pid: int, timeout_s: float) -> int:
    found = []
    _wait_for(lambda: found.extend(int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
              or found, timeout_s)
    return found[0]


def _wait_for(condition, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
