"""The parent's side of the child's output: pipes the parent made before the child started, read
without blocking, within byte limits and within the wall-clock limit.

Nothing the child does to paths can redirect them (it never had a path to them), a child that
stops reading or writing cannot make the parent wait past the deadline, and a child that writes
without end is stopped at the output limit.
"""

from __future__ import annotations

import dataclasses
import os
import select
import subprocess
import time

_CHUNK = 65536
_TICK_S = 0.1  # how often the loop looks whether the child has ended


@dataclasses.dataclass
class Streams:
    """What came through the pipes."""

    stderr_tail: bytes = b""
    output_bytes: int = 0  # stdout and stderr together
    result: bytes = b""
    result_overflow: bool = False  # more than the result limit arrived: not a report of ours


@dataclasses.dataclass
class Pipes:
    """The read ends the parent keeps, and the write ends the child inherits."""

    stdout: int
    stderr: int
    result: int
    child_stdout: int
    child_stderr: int
    child_result: int

    def close_child_ends(self) -> None:
        for fd in (self.child_stdout, self.child_stderr, self.child_result):
            os.close(fd)

    def close(self) -> None:
        for fd in (self.stdout, self.stderr, self.result):
            os.close(fd)


def open_pipes() -> Pipes:
    ends = [os.pipe() for _ in range(3)]  # non-inheritable; Popen passes the child's ends
    for read, _ in ends:
        os.set_blocking(read, False)
    (out_r, out_w), (err_r, err_w), (res_r, res_w) = ends
    return Pipes(out_r, err_r, res_r, out_w, err_w, res_w)


def wait(proc: subprocess.Popen, pipes: Pipes, streams: Streams, *, deadline: float, output_limit: int,
         result_limit: int, tail: int) -> str | None:
    """Read the pipes until the child ends. Return None when it ended by itself, "wall" at the
    deadline, "output" at the output limit; the caller then kills it."""
    poller = select.poll()
    for fd in (pipes.stdout, pipes.stderr, pipes.result):
        poller.register(fd, select.POLLIN)
    while proc.poll() is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "wall"
        for fd, _ in poller.poll(min(remaining, _TICK_S) * 1000):
            if _read(fd, pipes, streams, output_limit, result_limit, tail) == "closed":
                poller.unregister(fd)
        if streams.output_bytes > output_limit:
            return "output"
    return None


def drain(pipes: Pipes, streams: Streams, *, output_limit: int, result_limit: int, tail: int) -> None:
    """Read what is left once every writer is dead, still within the limits."""
    for fd in (pipes.stdout, pipes.stderr, pipes.result):
        while _read(fd, pipes, streams, output_limit, result_limit, tail) == "more":
            pass


def _read(fd: int, pipes: Pipes, streams: Streams, output_limit: int, result_limit: int, tail: int) -> str:
    """Read one chunk into `streams`: "more" when there may be more, "empty" when nothing is
    waiting, "closed" at end of file or once the stream is over its limit (no more is read)."""
    try:
        data = os.read(fd, _CHUNK)
    except BlockingIOError:
        return "empty"
    if not data:
        return "closed"
    if fd == pipes.result:
        streams.result_overflow |= len(streams.result) + len(data) > result_limit
        streams.result = (streams.result + data)[:result_limit]
        return "closed" if streams.result_overflow else "more"
    streams.output_bytes += len(data)
    if fd == pipes.stderr:
        streams.stderr_tail = (streams.stderr_tail + data)[-tail:]
    return "closed" if streams.output_bytes > output_limit else "more"
