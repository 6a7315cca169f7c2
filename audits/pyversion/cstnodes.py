"""Reading libcst trees fast: the children that matter.

libcst's visitors touch every node (whitespace included) and cost about a second on a 150 KB
script; the version gate needs the significant nodes once (where they sit comes from
audits/submission/positions.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst

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


def walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and every node under it that carries code, by the nodes' fields (libcst's visitors
    and matchers rebuild and re-check every node, and the matchers module is slow to import)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))
