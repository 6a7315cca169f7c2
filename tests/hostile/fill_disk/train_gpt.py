"""Hostile: writes files of 8 MiB (just under the per-file limit) until the disk refuses, in
its folder and in TMPDIR, and reports how much it wrote."""
import os
import tempfile

_chunk = b"x" * 2**20
_written = 0
try:
    for _i in range(100000):
        _folder = "." if _i % 2 else tempfile.gettempdir()
        with open(os.path.join(_folder, f"fill{_i}.bin"), "wb") as _f:
            for _ in range(8):
                _f.write(_chunk)
                _written += len(_chunk)
except OSError as _exc:
    raise RuntimeError(f"wrote {_written // 2**20} MiB, then {_exc.strerror}") from None

if __name__ == "__main__":
    pass
