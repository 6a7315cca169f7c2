"""Jobs for the sweep's worker pool tests: the workers import them by name, so they live in a
module of their own rather than in a test module."""

from __future__ import annotations

import os
import subprocess
import threading


def work(job):
    kind, value = job
    if kind == "square":
        return value * value
    if kind == "block":  # never returns: only the timeout ends it
        threading.Event().wait()
    if kind == "hog":  # holds `value` bytes resident, then blocks
        hoard = bytearray(value)
        for i in range(0, value, 4096):
            hoard[i] = 1
        threading.Event().wait()
    if kind == "exit":
        os._exit(value)
    if kind == "raise":
        raise ValueError(value)
    if kind == "child":  # a process in its own session, as the smoke import starts, then blocks
        proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
        with open(value + ".part", "w") as handle:
            handle.write(str(proc.pid))
        os.replace(value + ".part", value)  # the pid whole or not at all, whenever the kill comes
        threading.Event().wait()
    raise AssertionError(kind)
