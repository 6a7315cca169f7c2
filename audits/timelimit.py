"""The whole audit's time limit. A timer signal stops the check (or the reading of a folder) that
runs when the limit passes; the checks not yet run are skipped, and AUDIT_TIME_LIMIT says which,
so the report keeps every finding made before. Only the main thread gets the signal: elsewhere
(and with no limit) nothing is bounded."""

from __future__ import annotations

import contextlib
import signal
import threading


class Reached(BaseException):
    """The limit passed. Not an Exception: a check's own `except Exception` must not take it for
    a fault of its input."""


_state = {"seconds": None, "expired": False}


def _on_timer(signum, frame):
    _state["expired"] = True
    raise Reached()


@contextlib.contextmanager
def limit(seconds: float | None):
    """Bound what runs inside to `seconds` of wall-clock time (None: unbounded)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_timer)
    _state.update(seconds=seconds, expired=False)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _state.update(seconds=None, expired=False)


def expired() -> bool:
    return _state["expired"]


def stopped(where: str, not_run: list[str]) -> str:
    """The one-line message of AUDIT_TIME_LIMIT."""
    shown = ", ".join(not_run[:8]) + (f" and {len(not_run) - 8} more" if len(not_run) > 8 else "")
    return (f"the audit stopped at its {_state['seconds']:g} s time limit {where}"
            + (f"; not checked: {shown}" if not_run else ""))
