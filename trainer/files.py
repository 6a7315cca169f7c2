"""The one way pgolf writes a file it must never leave half-written: the artifact, reports, the
sweep's pages."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write `data` (text as UTF-8) to `path`: into a temporary file of a unique name beside it,
    flushed to disk, then renamed over it, so neither a reader nor a crash ever sees half a
    file. Missing parent folders are made; the file gets the mode the umask gives; on failure
    the temporary file is removed and `path` is as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 is for the temporary name only
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
