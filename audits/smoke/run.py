"""`run_smoke`: import a submission's entry script in the sandbox and say what happened.

The audited code runs only here, only in the child process, and only inside the sandbox that
`isolation` builds: a temporary copy of the folder as working directory, a scrubbed environment,
resource limits, a wall-clock limit, and every process killed at the end. The original folder is
fingerprinted before and after, so a write that got through is reported, not missed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from audits.findings import Finding
from audits.smoke import classify, guard, isolation
from audits.smoke.isolation import Sandbox
from audits.submission import ENTRY_SCRIPT, Script, Submission

_COPY_LIMIT = 64 * 2**20  # files larger than this (checkpoints, data) are not copied
_RESULT_LIMIT = 2**20
_TAIL = 2000
_REAP_S = 10.0  # how long to wait for the child's processes to die


@dataclasses.dataclass(frozen=True)
class Limits:
    wall_s: float = 120.0
    cpu_s: int = 120
    memory_bytes: int = 4 * 2**30
    processes: int = 256  # processes and threads
    open_files: int = 256
    output_bytes: int = 8 * 2**20  # stdout, stderr and any file the script writes

    def describe(self) -> str:
        return (f"limits {self.wall_s:g} s wall, {self.cpu_s} s CPU, {self.memory_bytes / 2**30:g} GiB "
                f"memory, {self.processes} processes, {self.open_files} open files, "
                f"{self.output_bytes / 2**20:g} MiB output")


@dataclasses.dataclass
class SmokeResult:
    """What the smoke import of one script found; `findings` are its IMPORT_* findings."""

    script: str | None  # the entry script, relative to the folder; None when there is none
    outcome: str  # pass, error, stopped, not_imported, no_script
    sandbox: Sandbox | None = None
    limits: Limits = Limits()
    seconds: float | None = None  # the import itself, timed inside the child
    python: str | None = None
    stubbed: list[str] = dataclasses.field(default_factory=list)
    dims: dict = dataclasses.field(default_factory=dict)
    code_bytes: int | None = None
    error: dict | None = None  # the child's description of the exception
    stopped_by: str | None = None  # the limit or event that ended the child before it reported
    not_imported: tuple[int, str] | None = None  # (line, what) that would start training
    forward: dict | None = None
    folder_changes: list[str] = dataclasses.field(default_factory=list)
    output_tail: str = ""
    source_path: str = ""  # where the child read the script's source, to map traceback frames
    folder_path: str = ""  # the temporary copy of the folder
    findings: list[Finding] = dataclasses.field(default_factory=list)


def run_smoke(sub: Submission, options, *, sandbox: Sandbox | None = None,
              limits: Limits = Limits()) -> SmokeResult:
    """Smoke-import the entry script of `sub` in the best sandbox this machine offers (or
    `sandbox`). `options.smoke_forward` adds a tiny forward pass."""
    script = entry_script(sub)
    if script is None or script.source is None:
        return SmokeResult(None, "no_script")
    result = SmokeResult(script.rel, "not_imported", sandbox=sandbox or isolation.best(), limits=limits,
                         code_bytes=len(script.data))
    result.not_imported = guard.starts_on_import(script.source)
    if result.not_imported is None:
        before = folder_state(sub.root)
        with tempfile.TemporaryDirectory(prefix="pgolf-smoke-") as tmp:
            _run_child(Path(tmp).resolve(), sub, script, result, options.smoke_forward)
        after = folder_state(sub.root)
        result.folder_changes = sorted(rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel))
    result.findings = classify.findings(result, sub, script)
    return result


def entry_script(sub: Submission) -> Script | None:
    """train_gpt.py, or the only top-level script when the folder has no train_gpt.py."""
    if ENTRY_SCRIPT in sub.scripts:
        return sub.scripts[ENTRY_SCRIPT]
    top = [s for rel, s in sub.scripts.items() if "/" not in rel]
    return top[0] if len(top) == 1 else None


def _run_child(tmp: Path, sub: Submission, script: Script, result: SmokeResult, forward: bool) -> None:
    sandbox, limits = result.sandbox, result.limits
    for name in ("home", "tmp", "out", "runner"):
        (tmp / name).mkdir()
    folder = tmp / "work" / sub.root.name
    shutil.copytree(sub.root, folder, symlinks=True, ignore=_too_big)
    if script.unwrapped is not None:  # run the payload; tracebacks then point into it
        source_path = tmp / "unwrapped" / script.rel
        source_path.parent.mkdir(parents=True)
        source_path.write_text(script.unwrapped, encoding="utf-8")
    else:
        source_path = folder / script.rel
    here = Path(__file__).parent
    for name in ("child.py", "stubs.py"):
        shutil.copy(here / name, tmp / "runner" / name)
    config = {
        "source": str(source_path), "script": str(folder / script.rel), "folder": str(folder),
        "module": Path(script.rel).stem, "result": str(tmp / "out" / "result.json"),
        "uid": sandbox.drop_to, "forward": forward,
        "limits": {"cpu_s": limits.cpu_s, "memory_bytes": limits.memory_bytes,
                   "processes": limits.processes + isolation.tasks_of(
                       sandbox.drop_to if sandbox.drop_to is not None else os.geteuid()),
                   "open_files": limits.open_files, "output_bytes": limits.output_bytes},
    }
    (tmp / "runner" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if sandbox.drop_to is not None:
        _chown_tree(tmp, sandbox.drop_to)
        os.chmod(tmp, 0o711)  # root without capabilities must still pass through it
    result.source_path, result.folder_path = str(source_path), str(folder)
    argv = [sys.executable, "-I", "-B", str(tmp / "runner" / "child.py"), str(tmp / "runner" / "config.json")]
    returncode = _execute(isolation.command(sandbox, tmp, folder, argv), folder, tmp, limits)
    _read_report(tmp / "out", result, returncode, sandbox)


def _execute(cmd: list[str], folder: Path, tmp: Path, limits: Limits) -> int | None:
    """Run the child; None when it hit the wall-clock limit. Every process it started is dead
    when this returns."""
    with open(tmp / "out" / "stdout", "wb") as out, open(tmp / "out" / "stderr", "wb") as err:
        proc = subprocess.Popen(cmd, cwd=folder, env=isolation.environment(tmp), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        try:
            return proc.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            return None
        finally:
            _kill_all(proc, f"HOME={tmp / 'home'}".encode())


def _kill_all(proc: subprocess.Popen, mark: bytes) -> None:
    """Kill the child's process tree (the first process of a PID namespace takes the whole
    namespace with it), its process group, and any process still carrying the child's
    environment mark (at level `none`, that finds a process that left the group, unless it also
    replaced its environment); then wait until none of them is left."""
    doomed = _descendants(proc.pid)
    for pid in doomed:
        _kill(pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    deadline = time.monotonic() + _REAP_S
    while time.monotonic() < deadline:
        alive = [pid for pid in doomed if _alive(pid)]
        alive += [pid for pid in _pids() if mark in _environ(pid).split(b"\0")]
        if not alive:
            return
        for pid in alive:
            _kill(pid)
        time.sleep(0.05)


def _descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        parent = stack.pop()
        for task in _listdir(f"/proc/{parent}/task"):
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                found.append(child)
                stack.append(child)
    return found


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read()
    except OSError:  # gone, or not ours to read
        return b""


def _read_report(out: Path, result: SmokeResult, returncode: int | None, sandbox: Sandbox) -> None:
    report = None
    try:
        with open(out / "result.json", "rb") as handle:
            report = json.loads(handle.read(_RESULT_LIMIT))
    except (OSError, ValueError):
        pass
    if returncode is not None and isinstance(report, dict) and isinstance(report.get("ok"), bool):
        result.outcome = "pass" if report["ok"] else "error"
        result.seconds = report.get("seconds")
        result.python = report.get("python")
        result.stubbed = list(report.get("stubbed", []))
        result.dims = report.get("dims") or {}
        result.error = report.get("error")
        result.forward = report.get("forward")
        return
    result.outcome = "stopped"
    result.stopped_by = _stop_reason(returncode, sandbox, result.limits)
    result.output_tail = _tail(out / "stderr")


def _stop_reason(returncode: int | None, sandbox: Sandbox, limits: Limits) -> str:
    if returncode is None:
        return f"the wall-clock limit ({limits.wall_s:g} s)"
    # bwrap reports a child killed by signal N as status 128 + N; unshare and Python as -N
    sig = -returncode
    if sandbox.level == "bubblewrap" and returncode > 128:
        sig = returncode - 128
    if sig in signal.valid_signals():
        return f"signal {signal.Signals(sig).name}"
    return f"the process ending with status {returncode} before the import finished"


def _tail(path: Path) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - _TAIL))
        return handle.read().decode("utf-8", "replace")


def _too_big(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if os.path.isfile(os.path.join(folder, n))
            and not os.path.islink(os.path.join(folder, n))
            and os.path.getsize(os.path.join(folder, n)) > _COPY_LIMIT]


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, uid, follow_symlinks=False)


def folder_state(root: Path) -> dict[str, tuple]:
    """Every entry under `root` with its kind, size, mode and content hash (files up to the copy
    limit), to see whether anything changed."""
    state: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            digest = ""
            if os.path.isfile(path) and not os.path.islink(path) and st.st_size <= _COPY_LIMIT:
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            state[os.path.relpath(path, root)] = (st.st_mode, st.st_size if digest else 0, digest)
    return state
