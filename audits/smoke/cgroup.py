"""A cgroup (version 2) around the smoke import, where this machine lets pgolf make one: a memory
limit for the whole process tree (what it writes to a tmpfs, and the kernel's memory for its files,
counted in), no swap, a process count that binds root too, and one write that kills every process
in it. pgolf makes it at the top of the cgroup2 hierarchy it sees, which takes root (or a
container's own hierarchy) and the memory controller enabled there; elsewhere memory is bounded per
process and the tree by the process limit (see isolation.py).

The child enters it before anything else runs: the command starts with a shell that moves itself
into the cgroup and then execs the sandbox, so every process of the tree is born inside.
"""

from __future__ import annotations

import errno
import functools
import os
import secrets
import time
from pathlib import Path

PREFIX = "pgolf-smoke-"
_REMOVE_S = 5.0  # how long to wait for the killed processes to leave before the cgroup is removed
_STALE_S = 3600.0  # an empty cgroup this old is a killed run's (a new one is entered at once)


@functools.lru_cache(maxsize=1)
def hierarchy() -> Path | None:
    """The top of the cgroup2 hierarchy where pgolf can make a cgroup with the memory
    controller, or None."""
    top = _cgroup2_mount()
    if top is None or not os.access(top, os.W_OK):
        return None
    try:
        enabled = (top / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    if "memory" not in enabled:
        return None
    try:  # one made and removed: the answer of this kernel and this user, not of the modes
        probe = make(top, 2**30, 8)
    except OSError:
        return None
    remove(probe)
    return top


def available() -> bool:
    return hierarchy() is not None


def _cgroup2_mount() -> Path | None:
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if "-" in fields and fields[fields.index("-") + 1] == "cgroup2":
            return Path(fields[4])
    return None


def make(top: Path, memory_bytes: int, processes: int) -> Path:
    """A new cgroup under `top` with these bounds; OSError where one cannot be made."""
    group = top / (PREFIX + secrets.token_hex(8))
    group.mkdir()
    try:
        (group / "memory.max").write_text(str(memory_bytes))
        for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1"), ("pids.max", str(processes))):
            if (group / name).exists():  # no swap accounting, an older kernel, no pids controller
                (group / name).write_text(value)
    except OSError:
        remove(group)
        raise
    return group


def entering(group: Path, argv: list[str]) -> list[str]:
    """`argv`, run by a shell that first moves itself into `group` (status 125 where it cannot)."""
    return ["sh", "-c", 'echo 0 > "$1/cgroup.procs" || exit 125; shift; exec "$@"', "sh", str(group), *argv]


def memory_ran_out(group: Path) -> bool:
    """Whether the kernel killed a process of the cgroup for its memory limit."""
    try:
        events = dict(line.split() for line in (group / "memory.events").read_text().splitlines())
    except (OSError, ValueError):
        return False
    return int(events.get("oom_kill", "0")) > 0 or int(events.get("oom_group_kill", "0")) > 0


def remove(group: Path) -> None:
    """Kill whatever is left in the cgroup, and remove it once the processes are gone."""
    try:
        (group / "cgroup.kill").write_text("1")
    except OSError:
        pass  # before Linux 5.14; the sandbox's own clean-up killed them
    deadline = time.monotonic() + _REMOVE_S
    while True:
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return  # left for the next run's `remove_stale`
            time.sleep(0.01)


def remove_stale(top: Path) -> None:
    """Remove the empty cgroups that killed runs left, an hour on (rmdir refuses one that holds a
    process; a young empty one may be another run's, about to be entered or read)."""
    for group in top.glob(PREFIX + "*"):
        try:
            if time.time() - group.stat().st_mtime > _STALE_S:
                group.rmdir()
        except OSError:
            pass
