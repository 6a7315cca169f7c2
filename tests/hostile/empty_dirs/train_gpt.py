"""Hostile: makes up to a million empty folders in each writable place (its working folder, /tmp,
/dev/shm): each takes kernel memory and no disk, so a size limit alone does not stop them; fails
the import naming how many each place took."""
import os

_made = {}
for _place in (".", "/tmp", "/dev/shm"):
    _count, _why = 0, "none refused"
    try:
        for _n in range(1_000_000):
            os.mkdir(os.path.join(_place, f"d{_n}"))
            _count += 1
    except OSError as _exc:
        _why = _exc.strerror
    _made[_place] = f"{_count} ({_why})"
raise RuntimeError("made " + ", ".join(f"{k}: {v}" for k, v in _made.items()))

if __name__ == "__main__":
    pass
