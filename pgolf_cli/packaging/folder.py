"""Build a folder next to its target and move it into place in one rename.

The folder is written inside a hidden staging directory in the target's parent (same filesystem,
so the final `rename` is atomic). On any failure or Ctrl-C the staging directory is removed, and
so are parent folders this run created, so nothing half-written is ever left behind. An existing
target is replaced only when asked, by renaming it aside first and deleting it last.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pgolf_cli.packaging.request import PackageError


def check_target(target: Path, force: bool) -> None:
    """Refuse before any work when the target exists (without `force`) or cannot be written."""
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


@contextlib.contextmanager
def staged(target: Path) -> Iterator[Path]:
    """Yield an empty folder to fill; the caller then calls `commit(staging, target, force)`.
    Everything this created is removed if the block does not finish."""
    created = _make_parents(target.parent)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".pgolf-staging",
                                        dir=target.parent))
    except OSError as exc:
        _remove_created(created)
        raise PackageError(f"cannot write in {target.parent}: {exc.strerror}; give another --out") from None
    folder = staging / target.name
    folder.mkdir()
    try:
        yield folder
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_created(created)
        raise
    shutil.rmtree(staging, ignore_errors=True)


def commit(folder: Path, target: Path, force: bool) -> None:
    """Move the staged `folder` to `target`, replacing an existing target when `force`."""
    aside = None
    if target.exists() or target.is_symlink():
        if not force:
            raise PackageError(f"{target} appeared while packaging; pass --force to replace it")
        aside = folder.parent / "replaced"
        os.rename(target, aside)
    try:
        os.rename(folder, target)
    except BaseException:
        if aside is not None:
            os.rename(aside, target)
        raise


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
