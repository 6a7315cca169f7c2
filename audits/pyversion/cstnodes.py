"""Reading libcst trees fast: the children that matter, and where chosen nodes sit.

libcst's visitors and its PositionProvider touch every node (whitespace included) and cost about a
second on a 150 KB script; the version gate needs the significant nodes once and the offsets of a
few. Offsets come from one pass of libcst's own code generation, which is lossless, so they are
offsets into the parsed source.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

import libcst as cst
from libcst._nodes.internal import (
    CodegenState,  # the hook libcst's own PositionProvider uses
)

_SKIPPED_FIELDS = {
    "lpar", "rpar", "comma", "semicolon", "leading_lines", "header", "footer", "trailing_whitespace",
    "lines_after_decorators", "newline", "dot", "colon", "equal", "lbracket", "rbracket", "lbrace",
    "rbrace", "operator", "whitespace_before", "whitespace_after",
}
_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The child nodes that carry code: punctuation, parentheses and whitespace are skipped."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(
            f.name for f in dataclasses.fields(node)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace"))
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:
                if is_node(item):
                    yield item
        elif is_node(value):
            yield value


_IS_NODE: dict[type, bool] = {}


def is_node(value: object) -> bool:
    """isinstance(value, CSTNode), without the cost of an ABC check on every call."""
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


class _SpanState(CodegenState):
    def __init__(self, module: cst.Module, wanted: set[int]):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.wanted = wanted
        self.started: dict[int, int] = {}
        self.spans: dict[int, tuple[int, int]] = {}

    def add_token(self, value: str) -> None:
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        self.offset += sum(len(token) for token in self.indent_tokens)

    def pop_trailing_newline(self) -> None:
        pass  # only offsets before the end of the file are asked for

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.started[id(node)] = self.offset

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.spans[id(node)] = (self.started.pop(id(node)), self.offset)


def spans(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int]]:
    """(start, end) offsets of each node, keyed by id(node). Recurses once per tree level: deep
    trees need a deep recursion limit (the caller runs it on a thread with a large stack)."""
    state = _SpanState(module, {id(node) for node in nodes})
    if state.wanted:
        module._codegen(state)
    return state.spans
