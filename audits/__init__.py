"""pgolf's audit engine: the rule catalogue, the submission model, the checks and the reports."""

import importlib.metadata as _dist

try:
    __version__ = _dist.version("pgolf")
except _dist.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+source"
