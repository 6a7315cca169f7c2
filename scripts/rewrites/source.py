"""The folder's Python files a rewrite may change: plain code that libcst reads (a self-extracting
wrapper's payload is not rewritten; the wrapper rewrites make their own)."""

from __future__ import annotations

import functools

import libcst as cst

from audits.submission import codesize
from audits.submission.unwrap import unwrap


def modules(files: dict[str, bytes]) -> dict[str, cst.Module]:
    """Path -> parsed module, for every .py file that is plain code."""
    found = {}
    for rel, data in sorted(files.items()):
        if rel.endswith(".py"):
            module = _parse(rel, data)
            if module is not None:
                found[rel] = module
    return found


@functools.lru_cache(maxsize=32)  # every rewrite of a folder reads the same files; modules are immutable
def _parse(rel: str, data: bytes) -> cst.Module | None:
    try:
        text = codesize.read_source(data)
        if unwrap(text, rel, _no_reads) is not None:
            return None
        return cst.parse_module(text)
    except (UnicodeDecodeError, SyntaxError, cst.ParserSyntaxError, RecursionError):
        return None


def _no_reads(rel: str) -> bytes:
    return b""


def changed(files: dict[str, bytes], new: dict[str, str]) -> dict[str, bytes] | None:
    """The folder with the files of `new` (path -> text) replacing or joining its own, or None when
    no file's bytes change."""
    out = dict(files)
    for rel, text in new.items():
        out[rel] = text.encode("utf-8")
    return out if out != files else None
