"""Count code bytes the way merged records do: minify, compress, wrap in a self-extracting stub.

The minifier, the wrapper and the compact form live in `trainer.codesize`: the trainer logs the
same count (`Code size (compressed): N bytes`) from inside the single-file bundle, which cannot
import pgolf, and one implementation means the log and the audit never disagree. Reading any
wrapper back is `audits.submission.unwrap`'s job.
"""

from __future__ import annotations

from trainer.codesize import WRAPPER_HEAD, WRAPPER_TAIL, MinifyError, compact_form, minify, wrap

__all__ = ["WRAPPER_HEAD", "WRAPPER_TAIL", "MinifyError", "compact_form", "minify", "wrap",
           "counted_bytes"]


def counted_bytes(raw: bytes, source: str | None) -> int:
    """Code bytes for the cap: the file as shipped or pgolf's compact form, whichever is smaller."""
    if source is None:
        return len(raw)
    return min(len(raw), len(compact_form(source).encode("utf-8")))
