"""Build a folder next to its target and move it into place in one rename.

The folder is written inside a hidden staging directory in the target's parent (same filesystem,
so the final `rename` is atomic). On any failure, Ctrl-C or SIGTERM the staging directory is
removed, and so are parent folders this run created, so nothing half-written is ever left
behind. An existing target is replaced only when asked, by exchanging the two folders in one
step (Linux `renameat2`), where the system and filesystem allow it; elsewhere by renaming it
aside into the staging directory first. The staging directory is locked while its run lives:
a run killed with SIGKILL leaves it, and the next run for the same target removes it, first
putting back an old target that the kill caught between the two renames.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import os
from collections.abc import Iterator
from pathlib import Path

from audits.smoke import tempdirs
from pgolf_cli.packaging.request import PackageError

_SUFFIX = ".pgolf-staging"
_ASIDE = "replaced"  # the old target, inside the staging directory, while it is being replaced
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def check_target(target: Path, force: bool) -> None:
    """Refuse before any work when the target exists (without `force`) or cannot be written."""
    recover(target)
    if (target.exists() or target.is_symlink()) and not force:
        raise PackageError(f"{target} already exists; pass --force to replace it, or choose another "
                           "--slug")
    parent = target.parent
    while not parent.exists():
        if parent.is_symlink():
            raise PackageError(f"{parent} is a broken symbolic link; give another --out")
        parent = parent.parent
    if not parent.is_dir():
        raise PackageError(f"{parent} is a file, not a folder; give another --out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PackageError(f"{parent} is not writable; give another --out")


def recover(target: Path) -> None:
    """Remove the staging directories that killed runs left for `target`, putting back an old
    target that a kill caught aside."""
    if not target.parent.is_dir():
        return
    pattern = glob.escape(f".{target.name}.") + "*" + _SUFFIX
    for staging, lock in tempdirs.stale(target.parent, pattern):
        aside = staging / _ASIDE
        if aside.is_dir() and not aside.is_symlink() and not _exists(target):
            os.rename(aside, target)
        tempdirs.release(staging, lock)


@contextlib.contextmanager
def staged(target: Path) -> Iterator[Path]:
    """Yield an empty folder to fill; the caller then calls `commit(folder, target, force)`.
    Everything this created is removed if the block does not finish."""
    created = _make_parents(target.parent)
    try:
        staging, lock = tempdirs.make(f".{target.name}.", suffix=_SUFFIX, parent=target.parent)
    except OSError as exc:
        _remove_created(created)
        raise PackageError(f"cannot write in {target.parent}: {exc.strerror}; give another --out") from None
    folder = staging / target.name
    try:
        with tempdirs.sigterm_unwinds():
            folder.mkdir()
            yield folder
    except BaseException:
        tempdirs.release(staging, lock)
        _remove_created(created)
        raise
    tempdirs.release(staging, lock)


def commit(folder: Path, target: Path, force: bool) -> None:
    """Move the staged `folder` to `target`, replacing an existing target when `force`; the old
    target ends in the staging directory, removed with it."""
    if not _exists(target):
        os.rename(folder, target)
        return
    if not force:
        raise PackageError(f"{target} appeared while packaging; pass --force to replace it")
    if _exchange(folder, target):
        return
    # Two renames: a kill between them leaves the old target aside, and `recover` puts it back.
    aside = folder.parent / _ASIDE
    os.rename(target, aside)
    try:
        os.rename(folder, target)
    except BaseException:
        os.rename(aside, target)
        raise


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step; False where the system or the filesystem cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # not Linux, or a C library without it
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _make_parents(path: Path) -> list[Path]:
    """mkdir -p, returning the folders it created (deepest last)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    created = []
    try:
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
    except OSError as exc:
        _remove_created(created)
        raise PackageError(f"cannot create {folder}: {exc.strerror}; give another --out") from None
    return created


def _remove_created(created: list[Path]) -> None:
    for folder in reversed(created):
        with contextlib.suppress(OSError):
            folder.rmdir()
