"""Kill every process the smoke import started, and wait until none is left."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

_REAP_S = 10.0  # how long to wait for the child's processes to die
_PF_KTHREAD = 0x00200000  # /proc/PID/stat `flags`: a kernel thread (no arguments, no environment)


def kill_all(proc: subprocess.Popen, mark: bytes) -> None:
    """Kill the child's process tree (the first process of a PID namespace takes the whole
    namespace with it), its process group, and any process still carrying the child's
    environment mark (at level `none`, that finds a process that left the group, unless it also
    replaced its environment); then wait until none of them is left. A process inside an exec
    has no readable environment for a moment: the scan waits for it and reads it again."""
    doomed = descendants(proc.pid)
    for pid in doomed:
        _kill(pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    deadline = time.monotonic() + _REAP_S
    while time.monotonic() < deadline:
        alive = [pid for pid in doomed if running(pid)]
        pending = False
        for pid in _pids():
            environ = _environ(pid)
            if mark in environ.split(b"\0"):
                alive.append(pid)
            elif not environ and _mid_exec(pid):
                pending = True  # its environment is not readable yet: look again
        if not alive and not pending:
            return
        for pid in alive:
            _kill(pid)
        time.sleep(0.05)


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, from the children lists of each of its threads in /proc."""
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


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def running(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _mid_exec(pid: int) -> bool:
    """A live user process with neither arguments nor environment: one inside an exec, whose new
    memory holds neither yet (a daemon of the import, say, exec'ing as the scan passes it)."""
    fields = _stat(pid)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return (fields is not None and fields[0] not in ("Z", "X") and not cmdline
            and not int(fields[6]) & _PF_KTHREAD)


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read()
    except OSError:  # gone, or not ours to read
        return b""
