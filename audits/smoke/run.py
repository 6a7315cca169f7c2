"""`run_smoke`: import a submission's entry script in the sandbox and say what happened.

The audited code runs only here, only in the child process, and only inside the sandbox that
`isolation` builds: a temporary copy of the folder as working directory, a scrubbed environment,
resource limits, a wall-clock limit, and every process killed at the end. The original folder is
fingerprinted before and after, so a write that got through is reported, not missed.

The temporary directory (`pgolf-smoke-*`, locked while in use, removed at the end whatever the
script built in it, and by the next run when this one was killed):
    runner/    child.py, stubs.py, config.json  (read-only in the sandbox where it can be)
    src/NAME/  the bounded copy of the folder, which the child copies into the area
    unwrapped/ the payload of a wrapped script
    area/      the sandbox area: HOME, TMPDIR and work/NAME, the working copy; a size-limited
               tmpfs where the level has one
Output comes back only through pipes (`pipes`), the report only with the run's nonce.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

from audits.findings import Finding
from audits.smoke import cgroup, guard, isolation, pipes, reap, snapshot, tempdirs
from audits.smoke.isolation import Sandbox
from audits.submission import ENTRY_SCRIPT, Script, Submission

_COPY_LIMIT = 64 * 2**20  # files larger than this (checkpoints, data) are not copied
_RESULT_LIMIT = 2**20
_TAIL = 2000
_PREFIX = "pgolf-smoke-"


@dataclasses.dataclass(frozen=True)
class Limits:
    wall_s: float = 120.0
    cpu_s: int = 120
    memory_bytes: int = 4 * 2**30  # the whole tree's, where a cgroup bounds it; else each process's
    # processes and threads: the import of a record with torch needs 2; without a cgroup each fork
    # could bring another `memory_bytes`
    processes: int = 8
    open_files: int = 256
    output_bytes: int = 8 * 2**20  # stdout and stderr together, and any one file the script writes
    disk_bytes: int = 512 * 2**20  # all the script writes in the sandbox area, where it is a tmpfs

    def describe(self, tree_memory: bool) -> str:
        memory = (f"{self.memory_bytes / 2**30:g} GiB memory for the whole process tree" if tree_memory else
                  f"{self.memory_bytes / 2**30:g} GiB memory a process (no cgroup: up to "
                  f"{self.processes * self.memory_bytes / 2**30:g} GiB for the tree)")
        return (f"limits {self.wall_s:g} s wall, {self.cpu_s} s CPU, {memory}, {self.processes} processes, "
                f"{self.open_files} open files, {self.output_bytes / 2**20:g} MiB output, "
                f"{self.disk_bytes / 2**20:g} MiB disk")


@dataclasses.dataclass
class SmokeResult:
    """What the smoke import of one script found; `findings`, its IMPORT_* findings in words, are
    made by the rule (audits/rules/smoke.py)."""

    script: str | None  # the entry script, relative to the folder; None when there is none
    outcome: str  # pass, error, stopped, not_imported, no_script
    sandbox: Sandbox | None = None
    limits: Limits = Limits()
    seconds: float | None = None  # the import itself, timed inside the child
    python: str | None = None  # the version that ran the import, as the child reports it
    target_python: tuple[int, int] | None = None
    interpreter: str = ""  # the Python that ran it: the target's when installed, else pgolf's own
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
    folder_path: str = ""  # the working copy of the folder
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
    result.target_python = options.target_python
    result.not_imported = guard.starts_on_import(script.source)
    if result.not_imported is None:
        before = snapshot.folder_state(sub.root, _COPY_LIMIT)
        with tempdirs.locked(_PREFIX) as tmp:
            _run_child(tmp.resolve(), sub, script, result, options.smoke_forward)
        after = snapshot.folder_state(sub.root, _COPY_LIMIT)
        result.folder_changes = sorted(rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel))
    return result


def entry_script(sub: Submission) -> Script | None:
    """train_gpt.py, or the only top-level script when the folder has no train_gpt.py."""
    if ENTRY_SCRIPT in sub.scripts:
        return sub.scripts[ENTRY_SCRIPT]
    top = [s for rel, s in sub.scripts.items() if "/" not in rel]
    return top[0] if len(top) == 1 else None


def _run_child(tmp: Path, sub: Submission, script: Script, result: SmokeResult, forward: bool) -> None:
    sandbox, limits = result.sandbox, result.limits
    runner, area, src = tmp / "runner", tmp / "area", tmp / "src" / sub.root.name
    runner.mkdir()
    area.mkdir()
    src.parent.mkdir()
    copied = snapshot.copy_folder(sub.root, src, file_limit=_COPY_LIMIT, total_limit=limits.disk_bytes)
    folder = area / "work" / sub.root.name
    if script.unwrapped is not None:  # run the payload; tracebacks then point into it
        source_path = tmp / "unwrapped" / script.rel
        source_path.parent.mkdir(parents=True)
        source_path.write_text(script.unwrapped, encoding="utf-8")
    else:
        source_path = folder / script.rel
    here = Path(__file__).parent
    for name in ("child.py", "stubs.py"):
        shutil.copy(here / name, runner / name)
    if sandbox.drop_to is not None:
        for name in ("runner", "src", "unwrapped"):
            if (tmp / name).exists():
                snapshot.chown_tree(tmp / name, sandbox.drop_to)
        os.chmod(tmp, 0o711)  # root without capabilities must still pass through it
    result.source_path, result.folder_path = str(source_path), str(folder)
    ends = pipes.open_pipes()
    nonce = secrets.token_hex(32).encode()
    nonce_read = _nonce_pipe(nonce)
    config = {
        "source": str(source_path), "script": str(folder / script.rel), "folder": str(folder),
        "src": str(src), "area": str(area), "module": Path(script.rel).stem,
        "nonce_fd": nonce_read, "result_fd": ends.child_result,
        "uid": sandbox.drop_to, "forward": forward,
        "limits": {"cpu_s": limits.cpu_s, "memory_bytes": limits.memory_bytes,
                   "processes": limits.processes + (0 if sandbox.own_user_namespace else isolation.tasks_of(
                       sandbox.drop_to if sandbox.drop_to is not None else os.geteuid())),
                   "open_files": limits.open_files, "output_bytes": limits.output_bytes},
    }
    (runner / "config.json").write_text(json.dumps(config), encoding="utf-8")
    python = isolation.interpreter(result.target_python)
    result.interpreter = python.path
    argv = [python.path, "-I", "-B", str(runner / "child.py"), str(runner / "config.json")]
    # The tmpfs holds the working copy as well as what the script writes.
    cmd = isolation.command(sandbox, tmp, area, limits.disk_bytes + copied, argv, python)
    group = _cgroup(sandbox, limits)
    if group is None and sandbox.tree_memory:  # none could be made now: the report says so
        result.sandbox = dataclasses.replace(sandbox, tree_memory=False)
    try:
        returncode, streams, stop = _execute(cgroup.entering(group, cmd) if group else cmd, tmp, area, limits,
                                             ends, nonce_read)
        if group is not None and returncode != 0 and cgroup.memory_ran_out(group):
            stop = "memory"
    finally:
        ends.close()
        if group is not None:
            cgroup.remove(group)
    _read_report(streams, nonce, result, returncode, stop)


_SANDBOX_TASKS = 4  # bwrap's own processes, counted in the cgroup's process limit


def _cgroup(sandbox: Sandbox, limits: Limits) -> Path | None:
    """A cgroup for the run where the sandbox was found to have one, None where it cannot be made
    now (the import then runs with the per-process bounds only)."""
    top = cgroup.hierarchy() if sandbox.tree_memory else None
    if top is None:
        return None
    cgroup.remove_stale(top)
    try:
        return cgroup.make(top, limits.memory_bytes, limits.processes + _SANDBOX_TASKS)
    except OSError:
        return None


def _nonce_pipe(nonce: bytes) -> int:
    """The read end of a pipe that holds only the nonce: the child reads it and closes it before
    the script runs."""
    read, write = os.pipe()
    os.write(write, nonce)
    os.close(write)
    return read


def _execute(cmd: list[str], tmp: Path, area: Path, limits: Limits, ends: pipes.Pipes,
             nonce_read: int) -> tuple[int | None, pipes.Streams, str | None]:
    """Run the child; return its status (None when it was stopped), what came through the pipes
    and what stopped it. Every process it started is dead when this returns."""
    streams = pipes.Streams()
    bounds = {"output_limit": limits.output_bytes, "result_limit": _RESULT_LIMIT, "tail": _TAIL}
    try:
        proc = subprocess.Popen(cmd, cwd=tmp, env=isolation.environment(area), stdin=subprocess.DEVNULL,
                                stdout=ends.child_stdout, stderr=ends.child_stderr,
                                pass_fds=(nonce_read, ends.child_result), start_new_session=True)
    finally:
        ends.close_child_ends()  # the parent keeps only the read ends: EOF once the child is gone
        os.close(nonce_read)
    try:
        stop = pipes.wait(proc, ends, streams, deadline=time.monotonic() + limits.wall_s, **bounds)
    finally:
        reap.kill_all(proc, f"HOME={area / 'home'}".encode())
    pipes.drain(ends, streams, **bounds)
    return (None if stop else proc.returncode), streams, stop


def _read_report(streams: pipes.Streams, nonce: bytes, result: SmokeResult, returncode: int | None,
                 stop: str | None) -> None:
    report = _authenticated(streams, nonce) if returncode == 0 else None
    if report is not None:
        result.outcome = "pass" if report["ok"] else "error"
        result.seconds = report.get("seconds")
        result.python = report.get("python")
        result.stubbed = list(report.get("stubbed", []))
        result.dims = report.get("dims") or {}
        result.error = report.get("error")
        result.forward = report.get("forward")
        return
    result.outcome = "stopped"
    result.stopped_by = _stop_reason(returncode, stop, result.sandbox, result.limits)
    result.output_tail = streams.stderr_tail.decode("utf-8", "replace")


def _authenticated(streams: pipes.Streams, nonce: bytes) -> dict | None:
    """The child's report: one message, the nonce then JSON, and nothing more."""
    if streams.result_overflow or b"\n" not in streams.result:
        return None
    given, body = streams.result.split(b"\n", 1)
    if not hmac.compare_digest(given, nonce):
        return None
    try:
        report = json.loads(body)
    except ValueError:
        return None
    return report if _well_formed(report) else None


def _well_formed(report) -> bool:
    """Does the report have the shape child.py gives it? The script ran in the same process as
    the child and may have written it: a field of another type is no report."""
    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e9
    def texts(v):
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    def optional(v, kind):
        return v is None or isinstance(v, kind) and not isinstance(v, bool)
    def frame(v):
        return (isinstance(v, list) and len(v) == 3 and optional(v[0], str) and optional(v[1], int)
                and isinstance(v[2], str))
    if not isinstance(report, dict) or not isinstance(report.get("ok"), bool):
        return False
    if not (number(report.get("seconds")) and isinstance(report.get("python"), str)
            and re.fullmatch(r"\d{1,2}\.\d{1,3}(\.\d{1,4})?", report["python"])
            and texts(report.get("stubbed", []))):
        return False
    dims = report.get("dims")
    if dims is not None and not (isinstance(dims, dict) and
                                 all(optional(v, (str, int, float)) for v in dims.values())):
        return False
    forward = report.get("forward")
    if forward is not None and not (isinstance(forward, dict) and isinstance(forward.get("ok"), bool)
                                    and isinstance(forward.get("detail"), str)):
        return False
    error = report.get("error")
    if error is None:
        return True
    syntax = error.get("syntax") if isinstance(error, dict) else None
    return (isinstance(error, dict) and isinstance(error.get("type"), str) and texts(error.get("mro"))
            and isinstance(error.get("message"), str) and isinstance(error.get("frames"), list)
            and all(frame(f) for f in error["frames"]) and optional(error.get("stub"), str)
            and optional(error.get("module"), str) and optional(error.get("errno"), int)
            and (syntax is None or isinstance(syntax, dict) and optional(syntax.get("file"), str)
                 and optional(syntax.get("line"), int) and isinstance(syntax.get("text"), str)))


def _stop_reason(returncode: int | None, stop: str | None, sandbox: Sandbox, limits: Limits) -> str:
    if stop == "wall":
        return f"the wall-clock limit ({limits.wall_s:g} s)"
    if stop == "output":
        return f"the output limit ({limits.output_bytes / 2**20:g} MiB of stdout and stderr)"
    if stop == "memory":
        return f"the memory limit of the whole process tree ({limits.memory_bytes / 2**30:g} GiB)"
    # bwrap reports a child killed by signal N as status 128 + N; unshare and Python as -N
    sig = -returncode
    if sandbox.level == "bubblewrap" and returncode > 128:
        sig = returncode - 128
    if sig in signal.valid_signals():
        return f"signal {signal.Signals(sig).name}"
    if returncode == 0:
        return "the process ending with status 0 without a valid report"
    return f"the process ending with status {returncode} before the import finished"
