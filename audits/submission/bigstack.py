"""Run a parser on a thread with a large stack and a deep recursion limit.

CPython's parser and compiler, libcst's native parser and libcst's code generation recurse once
per level of the syntax tree. On hostile input (an expression nested thousands deep) the default
8 MB stack can overflow and end the process; a 256 MB thread stack turns that into an error pgolf
reports.
"""

from __future__ import annotations

import sys
import threading

STACK_BYTES = 256 * 1024 * 1024
RECURSION_LIMIT = 20_000


def run(fn, *args):
    """fn(*args) on a large-stack thread; its exception, if any, is raised here."""
    result: list = []
    failure: list[BaseException] = []

    def work():
        try:
            result.append(fn(*args))
        except BaseException as exc:  # handed to the calling thread below
            failure.append(exc)

    old_stack = threading.stack_size(STACK_BYTES)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    try:
        thread = threading.Thread(target=work, name="pgolf-parser")
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old_stack)
        sys.setrecursionlimit(old_limit)
    if failure:
        raise failure[0]
    return result[0]
