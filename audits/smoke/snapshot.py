"""The parent's view of the submission folder: a bounded copy for the sandbox, and a fingerprint
to tell whether the import changed the original.

The folder is untrusted data: it is walked without recursion and without following links, to a
bounded depth; only folders, regular files and links are copied (a FIFO or device is skipped,
never opened for a blocking read), files over the per-file limit and beyond the total are left
out.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

MAX_DEPTH = 64  # deeper entries are neither copied nor fingerprinted
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every entry under `root`, parents first; unreadable entries
    are skipped."""
    stack = [("", 0)]
    while stack:
        rel, depth = stack.pop()
        try:
            entries = sorted(os.scandir(os.path.join(root, rel)), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            child = os.path.join(rel, entry.name)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield child, st
            if stat.S_ISDIR(st.st_mode) and depth + 1 < MAX_DEPTH:
                stack.append((child, depth + 1))


def copy_folder(src: Path, dst: Path, *, file_limit: int, total_limit: int) -> int:
    """Copy `src` to the new folder `dst`; return the bytes copied."""
    dst.mkdir()
    total = 0
    for rel, st in walk(src):
        target = dst / rel
        if stat.S_ISDIR(st.st_mode):
            target.mkdir()
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src / rel), target)
        elif stat.S_ISREG(st.st_mode) and st.st_size <= file_limit and total + st.st_size <= total_limit:
            data = _read_regular(src / rel, st.st_size)
            if data is not None:
                target.write_bytes(data)
                target.chmod(st.st_mode & 0o777)
                total += len(data)
    return total


def folder_state(root: Path, file_limit: int) -> dict[str, tuple]:
    """Every entry under `root` with its kind, size, mode and content hash (files up to
    `file_limit`), to see whether anything changed."""
    state: dict[str, tuple] = {}
    for rel, st in walk(root):
        digest = ""
        if stat.S_ISREG(st.st_mode) and st.st_size <= file_limit:
            data = _read_regular(root / rel, st.st_size)
            digest = hashlib.sha256(data).hexdigest() if data is not None else ""
        state[rel] = (st.st_mode, st.st_size if digest else 0, digest)
    return state


def chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for rel, _ in walk(root):
        os.chown(root / rel, uid, uid, follow_symlinks=False)


def _read_regular(path: Path, size: int) -> bytes | None:
    """At most `size` bytes of a regular file; None when it is something else by now."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(size)
