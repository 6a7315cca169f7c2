"""The parsed trees of a source, shared by every reader of one audit.

Each distinct source is parsed once by libcst and once by `ast`: the Python-version gate, the
legality analysis, the unwrapper, the import list and the smoke guard read the same trees. A
parse that fails fails the same way for every reader: its exception is kept and raised again.

Both parsers run on a large-stack thread (deeply nested code parses or fails with an error
instead of overflowing the process stack); `ast` with warnings off (an invalid escape is the
version gate's finding, not a line on stderr). libcst is not given what it cannot parse in bounded
time and memory: its parser slows down steeply with nesting (a sum of 4,000 names takes 47 s) and
takes about 2 KB of memory per character, so deeper or larger sources raise TooComplex. Readers
must not change the trees they get.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import re
import warnings
from collections.abc import Callable
from typing import TypeVar

import libcst as cst
from libcst._nodes.base import CSTNode

from audits.submission import bigstack
from audits.submission import positions as _positions

MAX_CST_CHARS = 1_000_000  # ~2 GB of libcst nodes; training scripts are a few hundred KB
MAX_DEPTH = 500  # syntax-tree depth; training scripts stay under 50

# The scripts of one folder, then the next folder's: an audit reads a folder's scripts in turn,
# so a small cache serves every reader without holding a batch of folders' trees.
_KEEP = 8
_cache: collections.OrderedDict[tuple[str, object], tuple[object, Exception | None]] = \
    collections.OrderedDict()

T = TypeVar("T")
_CHAIN_BREAKS = re.compile(r"[\n,;:=()\[\]{}]")


class TooComplex(ValueError):
    """A source not given to libcst: too large or too deeply nested for it."""


def cst_module(source: str) -> cst.Module:
    """The libcst module of `source`; raises what libcst raised (ParserSyntaxError, ...), or
    TooComplex."""
    return _parsed("cst", source, _cst_parse)


def ast_module(source: str) -> ast.Module:
    """The ast module of `source`; raises what `ast.parse` raised (SyntaxError, ...)."""
    return _parsed("ast", source, _ast_parse)


def positions(module: cst.Module) -> _positions.Positions:
    """Where each node of `module` sits: recorded once, when a reader first asks (the version
    gate and the legality analysis ask about the same module)."""
    key = ("positions", module)  # libcst nodes hash and compare by identity
    if key not in _cache:
        _store(key, lambda: bigstack.run(_positions.record, module))
    _cache.move_to_end(key)
    found, error = _cache[key]
    if error is not None:
        raise error.with_traceback(None)
    return found


def _cst_parse(source: str) -> cst.Module:
    if len(source) > MAX_CST_CHARS:
        raise TooComplex(f"{len(source):,} characters is over the {MAX_CST_CHARS:,} pgolf parses")
    depth = _depth(source)
    if depth > MAX_DEPTH:
        raise TooComplex(f"it nests about {depth:,} levels deep; pgolf parses to {MAX_DEPTH}")
    # libcst's grammar decides what parses. Each node's own checks, run as the tree is built, only
    # raise, and some are stricter than Python about spaces in minified code (`sum((a)-(0 if b
    # else c)for b in d)`): a source that passes them gives the same tree without them, so they
    # are off, which also builds the tree about a fifth faster. Code generation stays lossless,
    # so positions stay exact.
    with _node_checks_off():
        return cst.parse_module(source)


@contextlib.contextmanager
def _node_checks_off():
    check = CSTNode.__post_init__  # libcst's internal hook: every node validates itself there
    CSTNode.__post_init__ = lambda self: None
    try:
        yield
    finally:
        CSTNode.__post_init__ = check


def _depth(source: str) -> int:
    """The depth of the syntax tree, from `ast` (fast, iterative); for a source `ast` rejects (newer
    syntax than this Python's), the bracket depth plus the longest chain of binary operators with
    no bracket, comma or assignment between them (`a+b+...` nests as deep as it is long)."""
    try:
        tree = ast_module(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        depth = deepest = 0
        for char in source:
            depth += (char in "([{") - (char in ")]}")
            deepest = max(deepest, depth)
        chains = (sum(piece.count(op) for op in "+-*/%&|^@") for piece in _CHAIN_BREAKS.split(source))
        return deepest + max(chains, default=0)
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _ast_parse(source: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def _parsed(kind: str, source: str, parse: Callable[[str], T]) -> T:
    key = (kind, source)
    if key not in _cache:
        _store(key, lambda: bigstack.run(parse, source))
    _cache.move_to_end(key)
    tree, error = _cache[key]
    if error is not None:
        raise error.with_traceback(None)
    return tree


def _store(key: tuple, make: Callable[[], object]) -> None:
    try:
        _cache[key] = (make(), None)
    except (SyntaxError, ValueError, RecursionError, MemoryError, cst.ParserSyntaxError) as exc:
        _cache[key] = (None, exc)  # kept and raised again for every reader
    while len(_cache) > _KEEP:
        _cache.popitem(last=False)


def clear() -> None:
    """Forget every tree (a benchmark's fresh start)."""
    _cache.clear()
