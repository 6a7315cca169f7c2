"""Run one function over many jobs on worker processes, none of which can hold up the rest.

Each worker takes one job at a time. A job that runs past `timeout_s`, or whose worker (with the
processes it started) holds more than `memory_bytes` resident, has its worker killed and is
reported as a Failure; a new worker takes the next job. A worker that dies is reported the same
way. Workers are spawned, not forked, so that they never inherit the caller's threads.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import select
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from pathlib import Path

from audits.smoke.reap import descendants, running

POLL_S = 0.5  # how often the time and memory of running jobs are checked
REAP_S = 10.0  # how long a kill waits for the killed processes to end
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclasses.dataclass(frozen=True)
class Failure:
    """Why a job has no result: it timed out, ran out of memory, raised, or its worker died."""

    kind: str  # timeout, memory, error
    message: str


def run(jobs: Sequence, work: Callable, *, workers: int, timeout_s: float, memory_bytes: int,
        done: Callable[[int, object], None]) -> None:
    """Call `done(index, result)` once for every job, in the order they finish, where result is
    `work(job)` or a Failure. `work` must be importable by name (the workers import it)."""
    context = multiprocessing.get_context("spawn")
    pending = list(range(len(jobs)))[::-1]
    starting: list[_Worker] = []  # spawned, not yet ready: a job's clock starts when it is handed over
    idle: list[_Worker] = []
    busy: dict[_Worker, tuple[int, float]] = {}
    try:
        while pending or busy:
            while len(starting) + len(idle) < len(pending) and len(starting) + len(idle) + len(busy) < workers:
                starting.append(_Worker(context, work))
            while pending and idle:
                worker, index = idle.pop(), pending.pop()
                worker.conn.send((index, jobs[index]))
                busy[worker] = (index, time.monotonic())
            watched = starting + list(busy)
            ready = wait([w.conn for w in watched] + [w.process.sentinel for w in watched], timeout=POLL_S)
            for worker in [w for w in starting if w.conn in ready or w.process.sentinel in ready]:
                try:
                    worker.conn.recv()
                except (EOFError, OSError):  # it could not start, and no other worker would
                    raise RuntimeError(f"a sweep worker could not start: {worker.death()}") from None
                starting.remove(worker)
                idle.append(worker)
            for worker, (index, started) in list(busy.items()):
                healthy = False
                if worker.conn in ready:
                    try:
                        _, result = worker.conn.recv()
                        healthy = True
                    except (EOFError, OSError):
                        result = Failure("error", worker.death())
                elif worker.process.sentinel in ready:
                    result = Failure("error", worker.death())
                elif time.monotonic() - started > timeout_s:
                    result = Failure("timeout", f"stopped after {timeout_s:g} s")
                elif worker.resident() > memory_bytes:
                    result = Failure("memory", f"stopped at over {memory_bytes // 2**20} MiB resident")
                else:
                    continue
                del busy[worker]
                if healthy:
                    idle.append(worker)
                else:
                    worker.kill()
                done(index, result)
    finally:
        for worker in starting + idle + list(busy):
            worker.stop()


class _Worker:
    def __init__(self, context, work: Callable):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, work), daemon=True)
        self.process.start()
        child.close()

    def resident(self) -> int:
        """Resident bytes of the worker and every process below it (0 where /proc is missing)."""
        total = 0
        for pid in [self.process.pid, *descendants(self.process.pid)]:
            try:
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
            except (OSError, IndexError, ValueError):
                continue
        return total

    def death(self) -> str:
        self.process.join(timeout=5)
        return f"the worker died (exit status {self.process.exitcode})"

    def kill(self) -> None:
        """Kill the worker and everything it started (the smoke import runs in its own session),
        and wait until they have ended: a process the worker started is not the pool's child, so
        its end is watched through a pidfd (or /proc where there is none), not waited for."""
        doomed = [*descendants(self.process.pid), self.process.pid]
        watches = {pid: _pidfd(pid) for pid in doomed}  # opened first: a pidfd never names a reused pid
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.process.join()
        self.conn.close()
        deadline = time.monotonic() + REAP_S
        for pid, fd in watches.items():
            _wait_ended(pid, fd, deadline)

    def stop(self) -> None:
        if self.process.is_alive():
            self.kill()
        else:
            self.conn.close()


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # gone already, or no pidfds here (not Linux, or before 5.3)
        return None


def _wait_ended(pid: int, fd: int | None, deadline: float) -> None:
    """Wait until `pid` has ended (a zombie counts), or until `deadline`."""
    if fd is not None:
        try:
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(fd)
        return
    while time.monotonic() < deadline and running(pid):
        time.sleep(0.01)


def _serve(conn, work: Callable) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    conn.send("ready")
    while True:
        try:
            index, job = conn.recv()
        except EOFError:
            return
        try:
            result = work(job)
        except Exception as exc:  # a bug or bad input in one job: report it, take the next
            last = traceback.format_exc().strip().splitlines()[-1]
            result = Failure("error", last if str(exc) else type(exc).__name__)
        conn.send((index, result))
