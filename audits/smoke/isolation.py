"""How the smoke import is isolated from this machine: the sandbox levels, and the command,
environment and identity each one runs the child with.

Levels, best first (the best one that works here is used; the smoke findings name it, and every
output's verdict line names one short of the full level, bubblewrap with the inode bound and a
cgroup, with what it leaves open):
- bubblewrap: new network, PID, IPC and UTS namespaces; a root filesystem that holds only the
  system and Python directories and the temporary directory, all read-only, plus a tmpfs of
  bounded size and inodes (the sandbox area) for the copy of the folder, HOME and TMPDIR, /tmp
  and /dev/shm as tmpfs of the same bounds, /dev read-only; no new privileges; run as nobody
  when pgolf runs as root. The tmpfs are mounted by `unshare` in a mount namespace of their own
  before bubblewrap starts (bubblewrap sizes a tmpfs but cannot bound its inodes); where
  `unshare` cannot run, bubblewrap mounts them sized only, and the report says so.
- unshare: new network, PID and mount namespaces and a fresh /proc (util-linux `unshare`); the
  host's filesystem, with the same bounded tmpfs mounted over the sandbox area and /dev/shm.
- none: no namespaces. The import has network access, and the sandbox area is a plain folder on
  the host's disk, limited per file only; the report says so.
At every level: a fresh process, a scrubbed environment, HOME and TMPDIR inside the sandbox
area, resource limits, and everything the child started is killed at the end (at `none`, a
daemon that leaves the process tree and group and replaces its environment can survive).
Memory is bounded for the whole process tree by a cgroup where this machine lets pgolf make one
(`cgroup`), else per process, the tree then bounded by the process limit. A tmpfs disappears
with its mount namespace, so at the first two levels nothing the script wrote is left on the
host's disk.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from audits.smoke import cgroup

NOBODY = 65534
INODES = 10_000  # files and folders a tmpfs of the sandbox holds, where its mount takes a bound
_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                 "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd",
                 "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/alternatives")


@dataclasses.dataclass(frozen=True)
class Sandbox:
    level: str  # bubblewrap, unshare, none
    network_isolated: bool
    own_pid_namespace: bool  # every process the import started dies with it
    private_filesystem: bool  # only the sandbox area is writable, nothing else is visible
    disk_quota: bool  # the sandbox area is a size-limited tmpfs
    drop_to: int | None  # the uid the child switches to before running the script
    inode_bound: bool = False  # every writable tmpfs holds at most INODES files and folders
    tree_memory: bool = False  # a cgroup bounds the memory of the whole process tree

    @property
    def process_limit_enforced(self) -> bool:
        """The kernel never applies the process limit to uid 0."""
        return self.drop_to is not None or os.geteuid() != 0

    @property
    def own_user_namespace(self) -> bool:
        """Whether the child runs in a user namespace `unshare` made (pgolf not root, at the unshare
        level or bubblewrap with the inode bound): the process limit then counts its own
        processes only, not every other one of this user."""
        return os.geteuid() != 0 and (self.level == "unshare" or self.level == "bubblewrap" and self.inode_bound)

    def not_isolated(self) -> list[str]:
        """What this level leaves open, in a few words each: empty at the full level (bubblewrap
        with the inode bound and a cgroup)."""
        gaps = []
        if not self.network_isolated:
            gaps.append("network")
        if not self.private_filesystem:
            gaps.append("host files (readable, writable)")
        if not self.own_pid_namespace:
            gaps.append("other processes")
        if not self.disk_quota:
            gaps.append("disk (per-file limit only)")
        elif not self.inode_bound:
            gaps.append("inodes (bounded by memory only)")
        if not self.tree_memory:
            gaps.append("tree memory (per-process limit, " + ("process cap)" if self.process_limit_enforced
                                                             else "no process cap as root)"))
        return gaps

    def weaker(self) -> str | None:
        """The level and what it leaves open, for the verdict line; None at the full level."""
        gaps = self.not_isolated()
        return f"sandbox: {self.level}, NOT isolated: " + ", ".join(gaps) if gaps else None

    def describe(self) -> str:
        parts = ["no network" if self.network_isolated else "WITH network access (not isolated)"]
        parts.append("own PID namespace" if self.own_pid_namespace
                     else "no PID namespace (other processes are visible; detached processes may survive)")
        parts.append("read-only system, only the temporary copy writable" if self.private_filesystem
                     else "host filesystem, writable wherever this user can write")
        parts.append(("size- and inode-limited" if self.inode_bound else "size-limited") + " tmpfs for the copy"
                     if self.disk_quota else "copy on the host's disk, no size limit but per file")
        parts.append("a cgroup bounds the tree's memory" if self.tree_memory
                     else "memory bounded per process (no cgroup)")
        uid = self.drop_to if self.drop_to is not None else os.geteuid()
        parts.append(f"uid {uid}" + ("" if self.process_limit_enforced else " (no process limit for root)"))
        return f"{self.level}: " + ", ".join(parts)


def sandboxes() -> dict[str, Sandbox]:
    """Every level that works on this machine, best first."""
    return dict(_probe())


def best() -> Sandbox:
    return next(iter(sandboxes().values()))


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[tuple[str, Sandbox], ...]:
    drop_to = NOBODY if os.geteuid() == 0 else None
    tree = cgroup.available()
    found = []
    if shutil.which("bwrap"):
        bounds = (True, False) if shutil.which("unshare") else (False,)
        bounded = next((b for b in bounds if _works(functools.partial(_bwrap_prefix, inode_bound=b))), None)
        if bounded is not None:
            found.append(("bubblewrap", Sandbox("bubblewrap", True, True, True, True, drop_to, bounded, tree)))
    if shutil.which("unshare") and _works(_unshare_prefix):
        found.append(("unshare", Sandbox("unshare", True, True, False, True, None, True, tree)))
    found.append(("none", Sandbox("none", False, False, False, False, None, False, tree)))
    return tuple(found)


@dataclasses.dataclass(frozen=True)
class Interpreter:
    path: str
    paths: tuple[str, ...]  # what the sandbox must show for it to run: its folder and prefixes


_PROBE = ("import importlib.util, json, os, sys\n"
          "if importlib.util.find_spec('torch') is None: sys.exit(1)\n"
          "print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]))")


def interpreter(target: tuple[int, int]) -> Interpreter:
    """The Python that runs the import: `pythonX.Y` of the target when it is on PATH with torch
    installed, else the one running pgolf."""
    if sys.version_info[:2] != tuple(target):
        found = shutil.which(f"python{target[0]}.{target[1]}")
        if found:
            try:
                done = subprocess.run([found, "-I", "-c", _PROBE], stdin=subprocess.DEVNULL,
                                      capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                done = None
            if done is not None and done.returncode == 0:
                prefixes = [*json.loads(done.stdout), os.path.dirname(found)]
                return Interpreter(found, tuple({*prefixes, *map(os.path.realpath, prefixes)}))
    return Interpreter(sys.executable, tuple(_python_paths()))


def _works(prefix) -> bool:
    """Whether the level's command runs Python here, with its tmpfs mounted."""
    with tempfile.TemporaryDirectory(prefix="pgolf-probe-") as tmp:
        area = Path(tmp) / "area"
        area.mkdir()
        try:
            done = subprocess.run([*prefix(Path(tmp), area, 2**20), sys.executable, "-I", "-c", "pass"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0


def command(sandbox: Sandbox, tmp: Path, area: Path, area_bytes: int, argv: list[str],
            python: Interpreter) -> list[str]:
    """The command line that runs `argv` with `python` at this level, in `area`, with `tmp`
    readable and `area` writable (a tmpfs of `area_bytes` where the level has one)."""
    if sandbox.level == "bubblewrap":
        return [*_bwrap_prefix(tmp, area, area_bytes, python.paths, inode_bound=sandbox.inode_bound), *argv]
    if sandbox.level == "unshare":
        return [*_unshare_prefix(tmp, area, area_bytes), *argv]
    return list(argv)


def _bwrap_prefix(tmp: Path, area: Path, area_bytes: int, python_paths=(), *, inode_bound: bool) -> list[str]:
    """bwrap's command line; with `inode_bound`, behind `unshare` mounting the three tmpfs (the
    area, /tmp and /dev/shm) with an inode bound in a mount namespace that bwrap then starts in."""
    root = os.geteuid() == 0
    if root:
        # No user namespace: in one, only uid 0 would exist, and the child could not switch to
        # nobody. bwrap drops root's capabilities; the child needs these two to drop root itself.
        args = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args = ["bwrap", "--unshare-all"]
        if inode_bound:  # bwrap runs as root of unshare's user namespace: it would pass its capabilities on
            args += ["--cap-drop", "ALL", "--uid", str(os.getuid()), "--gid", str(os.getgid())]
    # The child is the namespace's first process: when it ends, the kernel kills the rest before bwrap
    # returns, so nothing is still dying when the import is reported.
    args += ["--as-pid-1", "--die-with-parent", "--new-session"]
    # /tmp first: a Python installed under it is bound on top of the fresh /tmp, not hidden by it.
    # Every writable mount is a tmpfs of the area's bounds; /dev (a tmpfs of device nodes) is then
    # made read-only, its shm and the nodes being mounts of their own.
    mounted = {"/tmp": tmp / "mnt-tmp", "/dev/shm": tmp / "mnt-shm", str(area): area}
    if inode_bound:
        writable = {dest: ["--bind", str(src), dest] for dest, src in mounted.items()}
    else:
        writable = {dest: ["--perms", "0777" if dest == str(area) else "1777", "--size", str(area_bytes),
                           "--tmpfs", dest] for dest in mounted}
    args += ["--proc", "/proc", "--dev", "/dev", *writable["/tmp"], *writable["/dev/shm"], "--remount-ro", "/dev"]
    bound: list[str] = []
    made: set[str] = set()
    for path in sorted({*_SYSTEM_PATHS, *_python_paths(), *python_paths}):
        if not os.path.lexists(path) or any(path.startswith(b + "/") for b in bound):
            continue
        if os.path.islink(path) and path in _SYSTEM_PATHS:
            args += ["--symlink", os.readlink(path), path]  # merged /usr: /bin -> usr/bin
        else:
            # bwrap copies the modes of the directories above a bind (/root is 0700); make them
            # passable for the unprivileged child
            for parent in reversed(Path(path).parents[:-1]):
                if str(parent) not in made:
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            args += ["--ro-bind", path, path]
        bound.append(path)
    for parent in reversed(tmp.parents[:-1]):  # e.g. a TMPDIR under a 0700 home
        if str(parent) not in made and str(parent) not in bound:
            args += ["--perms", "0755", "--dir", str(parent)]
    # The area is writable by the child whoever it runs as; the namespace is its own.
    args += ["--ro-bind", str(tmp), str(tmp), *writable[str(area)], "--chdir", str(area), "--"]
    if not inode_bound:
        return args
    user = [] if root else ["--user", "--map-root-user"]
    # A pgolf killed before bwrap starts is not there for bwrap to die with: the shell makes sure
    # its parent is still pgolf ($6) just before it becomes bwrap.
    mount = ('mkdir -p "$4" "$5" && mount -t tmpfs -o "size=$1,nr_inodes=$2,mode=0777" pgolf-smoke "$3" && '
             'mount -t tmpfs -o "size=$1,nr_inodes=$2,mode=1777" pgolf-tmp "$4" && '
             'mount -t tmpfs -o "size=$1,nr_inodes=$2,mode=1777" pgolf-shm "$5" && '
             'read -r _ _ _ parent _ < /proc/$$/stat && [ "$parent" = "$6" ] && shift 6 && exec "$@"')
    return ["unshare", *user, "--mount", "--", "sh", "-c", mount, "sh", str(area_bytes), str(INODES), str(area),
            str(mounted["/tmp"]), str(mounted["/dev/shm"]), str(os.getpid()), *args]


def _python_paths() -> list[str]:
    """The interpreter and its libraries: the venv, and the installation the venv points to."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}
    return [*paths, *(os.path.realpath(p) for p in paths)]  # as named, and where links lead


def _unshare_prefix(tmp: Path, area: Path, area_bytes: int) -> list[str]:
    # Without root, a user namespace is what allows the others (mapped to root inside it only).
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    # A fresh /proc: the host's would show other processes, and their environment to the same user.
    # The mount namespace is private (unshare's default propagation), so the tmpfs is never
    # seen from the host and goes when the namespace does.
    # The host's /dev/shm is writable by every user: a tmpfs of the same bounds goes over it.
    mount = ('mount -t tmpfs -o "size=$1,nr_inodes=$2,mode=0777" pgolf-smoke "$3" && '
             'mount -t tmpfs -o "size=$1,nr_inodes=$2,mode=1777" pgolf-shm /dev/shm && shift 3 && exec "$@"')
    return ["unshare", *user, "--net", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--",
            "sh", "-c", mount, "sh", str(area_bytes), str(INODES), str(area)]


def environment(area: Path) -> dict[str, str]:
    """The child's whole environment, built from nothing: no tokens, keys, SSH agent, cloud or
    proxy variables can leak in, and no hyperparameter overrides of the caller either."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(area / "home"),
        "TMPDIR": str(area / "tmp"),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "TORCH_COMPILE_DISABLE": "1",
        "OMP_NUM_THREADS": "1",  # threads count against the process limit
    }


def tasks_of(uid: int) -> int:
    """How many processes and threads `uid` runs now: without a user namespace the process limit
    counts them all, so the child's allowance comes on top."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1 ").split()[0]) == uid:
            count += int(fields.get("Threads", "1"))
    return count
