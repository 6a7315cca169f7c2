"""The one exception type for bad input to a run."""

from __future__ import annotations


class TrainerError(Exception):
    """A problem with the run's settings or data, found before any GPU time is spent.

    The entry point prints it as one line and exits with status 2; anything else is a bug and
    keeps its traceback.
    """
