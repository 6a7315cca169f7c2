"""Hostile: writes up to 2 GiB into each writable place outside its folder that a sandbox may leave
unsized (/dev/shm, /tmp, /dev itself), 4 MiB a file, and fails the import naming how much each
took."""
import os

_written = {}
for _place in ("/dev/shm", "/tmp", "/dev"):
    _total = 0
    try:
        for _n in range(512):
            with open(os.path.join(_place, f"fill{_n}"), "wb") as _f:
                for _ in range(4):
                    _f.write(b"\0" * 2**20)
                    _total += 2**20
    except OSError as _exc:
        _written[_place] = f"{_total // 2**20} MiB ({_exc.strerror})"
    else:
        _written[_place] = f"{_total // 2**20} MiB"
raise RuntimeError("wrote " + ", ".join(f"{k}: {v}" for k, v in _written.items()))

if __name__ == "__main__":
    pass
