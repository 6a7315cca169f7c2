"""Triton, where it is installed and can read the kernels' source.

CPU-only torch wheels come without Triton; then every kernel module runs its PyTorch formula.
@triton.jit reads each kernel's source through inspect, which finds none for code that the
self-extracting train_gpt.py runs: its wrapper exec()s a decompressed string. For that case the
string is put where inspect looks for it, linecache, under the name exec gave it.
"""

from __future__ import annotations

import linecache
from pathlib import Path

from trainer.codesize import read_source, unwrap

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None


def _kernel_sources_readable() -> bool:
    """Whether inspect can read this code's source, registering it when run by the wrapper."""
    if _kernel_sources_readable.__code__.co_filename != "<string>":
        return True  # a file on disk
    path = globals().get("__file__")  # the wrapper's: exec() ran this code in its namespace
    source = unwrap(read_source(Path(path).read_bytes())) if path else None
    if source is None:
        return False
    linecache.cache["<string>"] = (len(source), None, source.splitlines(keepends=True), "<string>")
    return True


if not _kernel_sources_readable():
    triton = tl = None
