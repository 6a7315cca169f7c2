"""Rewrites of a submission folder that change nothing it does, for scripts/metamorphic.py.

A rewrite takes the folder's files (path relative to the folder -> bytes) and returns the whole
folder rewritten, or None where it has nothing to rewrite (no loop to turn, no setting to flip).
Each is deterministic: the same folder gives the same bytes. The audit's verdict and its set of
blocking rules must come out the same on the rewritten folder as on the original.
"""

from __future__ import annotations

from collections.abc import Callable

from rewrites import comments, loops, methods, names, optimizers, settings, sibling, wrappers

Files = dict[str, bytes]
Rewrite = Callable[[Files], "Files | None"]

REWRITES: dict[str, Rewrite] = {
    "rename": names.rename,
    "strip_comments": comments.strip,
    "misleading_comments": comments.mislead,
    "wrap_lzma_b85": wrappers.lzma_b85,
    "wrap_zlib_b85": wrappers.zlib_b85,
    "wrap_packed_latin1": wrappers.packed_latin1,
    "wrap_linecache": wrappers.linecache_exec,
    "sibling_module": sibling.move_functions,
    "methods": methods.to_methods,
    "optimizer_swap": optimizers.swap,
    "hand_update": optimizers.hand_written,
    "for_to_while": loops.for_to_while,
    "while_to_for": loops.while_to_for,
    "comprehension_to_loop": loops.comprehension_to_loop,
    "loop_to_comprehension": loops.loop_to_comprehension,
    "flip_default": settings.flip_defaults,
}
