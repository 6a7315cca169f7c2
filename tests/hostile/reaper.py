"""Run a command as a child subreaper, so that every process it leaves behind becomes our child:
then list them, kill them and wait for them. Prints nothing of its own on stdout or stderr (the
command's output passes through); writes {"returncode", "leftovers", "max_rss_kib"} as JSON to
the file named first (the largest resident size of any process it waited for, itself or through
its own parent). Processes that are already dead (zombies) are not counted.

    python reaper.py RESULT.json TIMEOUT_S COMMAND...
"""

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def children() -> list[int]:
    pids = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as handle:
            pids += [int(pid) for pid in handle.read().split()]
    return pids


def alive(pid: int) -> bool:
    """Not a zombie: a process killed on its way out and handed to us is dead already."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def main(result_path: str, timeout_s: str, *command: str) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    proc = subprocess.Popen(command)
    try:
        returncode = proc.wait(timeout=float(timeout_s))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        returncode = "timeout"
    time.sleep(0.5)  # a process that was leaving reaches us
    leftovers = [{"pid": pid, "cmdline": cmdline(pid)} for pid in children() if alive(pid)]
    while pids := children():  # kill them, and what they leave in turn, and reap them all
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    with open(result_path, "w") as handle:
        json.dump({"returncode": returncode, "leftovers": leftovers,
                   "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}, handle)


if __name__ == "__main__":
    main(*sys.argv[1:])
