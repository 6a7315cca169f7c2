"""Temporary folders that are removed whatever was built in them, and even when their owner was
killed.

`make` creates a folder and holds an exclusive `flock` on it for as long as its owner runs (the
kernel drops the lock when the owner dies, SIGKILL included); `stale` finds the folders of a
pattern whose lock nobody holds, and `remove_stale` removes them; `sigterm_unwinds` has
SIGTERM remove the folders as Ctrl-C does; `locked` does all three for one block. `remove_tree`
removes a folder without recursion and by file descriptor, so a 3,000-deep tree (paths far over
PATH_MAX), unwritable folders and links are all handled; it never follows a link and never enters
another mount.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def make(prefix: str, *, suffix: str = "", parent: Path | None = None) -> tuple[Path, int]:
    """A new folder and the descriptor that holds its lock; `release` ends both."""
    while True:
        path = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
        fd = os.open(path, _DIR_FLAGS)
        # Another run's `stale` may have taken the folder in the instant before the lock: then it
        # is gone or going, and we start again.
        if _lock(fd) and _ident(os.stat(path, follow_symlinks=False)) == _ident(os.fstat(fd)):
            return path, fd
        os.close(fd)


def release(path: Path, fd: int) -> None:
    """Remove the folder made by `make` (or given by `stale`), then drop its lock."""
    try:
        remove_tree(path)
    finally:
        os.close(fd)


def stale(parent: Path, pattern: str) -> Iterator[tuple[Path, int]]:
    """The folders in `parent` matching `pattern` that this user owns and no live process holds,
    each with the descriptor of the lock this process now holds on it; the caller ends both with
    `release`. The pattern must name only folders made by `make`: any other is unlocked."""
    for path in parent.glob(pattern):
        try:
            if not path.is_dir() or path.is_symlink() or path.lstat().st_uid != os.geteuid():
                continue
            fd = os.open(path, _DIR_FLAGS)
        except OSError:
            continue
        if _lock(fd):
            yield path, fd
        else:  # its owner is alive, or another run removed it first
            os.close(fd)


def remove_stale(parent: Path, pattern: str) -> list[Path]:
    """Remove the `stale` folders; return them."""
    removed = []
    for path, fd in stale(parent, pattern):
        release(path, fd)
        removed.append(path)
    return removed


SUFFIX = ".flock"  # of the folders `locked` makes; an older pgolf's, never locked, lack it
STALE = "pgolf-*" + SUFFIX  # every such folder of pgolf's (pr, sweep, smoke)


@contextlib.contextmanager
def locked(prefix: str) -> Iterator[Path]:
    """A new folder in the system's temporary directory for the block, removed when the block
    ends, on SIGTERM too; the locked folders of pgolf that killed runs left are removed first."""
    parent = Path(tempfile.gettempdir())
    remove_stale(parent, STALE)
    with sigterm_unwinds():
        path, fd = make(prefix, suffix=SUFFIX, parent=parent)
        try:
            yield path
        finally:
            release(path, fd)


def _lock(fd: int) -> bool:
    """Take the folder's lock; False when another process holds it or the folder was removed."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return os.fstat(fd).st_nlink > 0


@contextlib.contextmanager
def sigterm_unwinds():
    """SIGTERM unwinds like Ctrl-C, so the folders of the block are removed before the process
    ends (only the main thread can handle signals; elsewhere this does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it (a link or file at `path` is removed itself)."""
    top = os.open(path.parent, _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        try:
            os.unlink(path.name, dir_fd=top)
            return
        except IsADirectoryError:
            pass
        except FileNotFoundError:
            return
        _remove_dir(top, path.name, _mounts_under(path))
    finally:
        os.close(top)


def _remove_dir(top: int, name: str, mounts: set[tuple[int, int]]) -> None:
    fd = _open_dir(top, name, mounts)
    if fd is None:
        return
    # One entry per level from `top` down: the folder's name, its parent's identity (checked
    # when climbing back through ".."), and the subfolders still to remove in it.
    levels = [(name, _ident(os.fstat(top)), _empty_but_folders(fd))]
    while levels:
        name, parent_id, subfolders = levels[-1]
        if subfolders:
            sub = subfolders.pop()
            child = _open_dir(fd, sub, mounts)
            if child is not None:
                levels.append((sub, _ident(os.fstat(fd)), _empty_but_folders(child)))
                os.close(fd)
                fd = child
            continue
        levels.pop()
        up = os.open("..", _DIR_FLAGS, dir_fd=fd) if levels else os.dup(top)
        os.close(fd)
        fd = up
        if _ident(os.fstat(up)) != parent_id:
            os.close(fd)
            raise OSError(f"cannot remove {name}: its parent folder moved during the removal")
        os.rmdir(name, dir_fd=up)
    os.close(fd)


def _open_dir(parent: int, name: str, mounts: set[tuple[int, int]]) -> int | None:
    """Open a subfolder for removal, first making it writable; None for a mount point."""
    st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if _ident(st) in mounts:
        return None
    if st.st_mode & 0o700 != 0o700:
        os.chmod(name, (st.st_mode & 0o7777) | 0o700, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _empty_but_folders(fd: int) -> list[str]:
    """Unlink every entry of the folder that is not a folder; return the names of the folders."""
    folders = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                try:
                    os.unlink(entry.name, dir_fd=fd)
                except FileNotFoundError:
                    pass
    return folders


def _mounts_under(path: Path) -> set[tuple[int, int]]:
    """The identities of the mount points under `path` (a script with the rights to mount could
    have bound a host folder into its copy)."""
    prefix = str(path) + "/"
    found = set()
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        point = _unescape(line.split(" ")[4])
        if point.startswith(prefix):
            try:
                found.add(_ident(os.stat(point, follow_symlinks=False)))
            except OSError:
                pass
    return found


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino
