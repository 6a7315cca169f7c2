"""Hostile: forks a dozen copies that each hold 64 MiB, so that a memory limit per process would
let the tree hold twelve times it; fails the import naming how many forks it got."""
import os
import signal
import time

_pids, _refused = [], "none refused"
for _ in range(12):
    try:
        _pid = os.fork()
    except OSError as _exc:
        _refused = _exc.strerror
        break
    if _pid == 0:
        _held = bytearray(64 * 2**20)
        time.sleep(60)
        os._exit(0)
    _pids.append(_pid)
for _pid in _pids:
    os.kill(_pid, signal.SIGKILL)
raise RuntimeError(f"forked {len(_pids)} ({_refused})")

if __name__ == "__main__":
    pass
