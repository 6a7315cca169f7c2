"""Hostile: six forks that each fill 768 MiB, 4.5 GiB together: a memory limit per process lets
the tree hold all of it. Each fork says on stderr how much the tree holds once its memory is
filled; the import fails naming how many forks filled theirs."""
import os
import signal
import sys
import time

_pids, _full = [], 0
for _ in range(6):
    _read, _write = os.pipe()
    _pid = os.fork()
    if _pid == 0:
        _held = bytearray(768 * 2**20)  # zeroed: every page is touched
        os.write(_write, b"1")
        time.sleep(120)
        os._exit(0)
    _pids.append(_pid)
    if os.read(_read, 1) == b"1":  # empty when the fork died before filling its memory
        _full += 1
        print(f"the tree holds {_full * 768} MiB in {_full} forks", file=sys.stderr, flush=True)
for _pid in _pids:
    os.kill(_pid, signal.SIGKILL)
raise RuntimeError(f"{_full} forks filled their memory")

if __name__ == "__main__":
    pass
