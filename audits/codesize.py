"""Count code bytes the way merged records do: minify, compress, wrap in a self-extracting stub.

The minifier, the wrapper and the compact form live in `trainer.codesize`: the trainer logs the
same count (`Code size (compressed): N bytes`) from inside the single-file bundle, which cannot
import pgolf, and one implementation means the log and the audit never disagree. Reading a
wrapper back (`unwrap`) is the audit's alone.
"""

from __future__ import annotations

import base64
import lzma

from trainer.codesize import WRAPPER_HEAD, WRAPPER_TAIL, MinifyError, compact_form, minify, wrap

__all__ = ["WRAPPER_HEAD", "WRAPPER_TAIL", "MinifyError", "compact_form", "minify", "wrap",
           "unwrap", "counted_bytes"]


def unwrap(text: str, limit: int = 8 * 1024 * 1024) -> str | None:
    """The source inside a wrapper that `wrap` wrote, or None when `text` is not exactly one (or
    its payload does not decode, or decodes to more than `limit` bytes). Never executes anything."""
    if not (text.startswith(WRAPPER_HEAD) and text.endswith(WRAPPER_TAIL)):
        return None
    try:
        packed = base64.b85decode(text[len(WRAPPER_HEAD):-len(WRAPPER_TAIL)])
        decompressor = lzma.LZMADecompressor(format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA2}])
        data = decompressor.decompress(packed, max_length=limit)
        return data.decode("utf-8") if decompressor.eof else None
    except (ValueError, lzma.LZMAError):  # UnicodeDecodeError is a ValueError
        return None


def counted_bytes(raw: bytes, source: str | None) -> int:
    """Code bytes for the cap: the file as shipped or pgolf's compact form, whichever is smaller."""
    if source is None:
        return len(raw)
    return min(len(raw), len(compact_form(source).encode("utf-8")))
