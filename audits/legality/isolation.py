"""Whether the run's attention keeps the documents of a packed row apart, and by what: a
variable-length kernel with cumulative sequence lengths (the library's names), or a mask that
compares one array at the query position with the same array at the key position. The mask is
found by where the positions are, not by what they are called: the third and fourth parameters of
a flex-attention mask function `(batch, head, query, key)`, or the two axes of an outer comparison
(`doc[:, :, None] == doc[:, None, :]`). A causal or sliding-window mask compares positions with
`>=` or a difference, never one array with itself: it keeps nothing apart.
"""

from __future__ import annotations

import re

import libcst as cst

from audits.legality import syntax
from audits.pyversion import cstnodes

# The variable-length kernels' own names (a library's functions and keywords), outside a comment.
_VARLEN = re.compile(r"(?m)^[^#\n]*\b(cu_seqlens\w*|flash_attn_varlen\w*|varlen_attn\w*)")


def found(scripts) -> str | None:
    """What keeps documents apart in the first of `scripts` (parsed) that has it, else None."""
    for script in scripts:
        varlen = _VARLEN.search(script.source)
        if varlen is not None:
            return varlen.group(1)
        mask = _document_mask(script.module)
        if mask is not None:
            return script.module.code_for_node(mask).strip()
    return None


def _document_mask(module: cst.Module) -> cst.Comparison | None:
    """The first comparison of one array with itself at a mask function's query and key positions,
    or along two new axes. (A walk by the nodes' fields: libcst's visitors rebuild every node and
    re-check it, which minified code can fail, and recurse as deep as the tree.)"""
    stack: list[tuple[cst.CSTNode, tuple[str, str] | None]] = [(module, None)]
    while stack:
        node, inner = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            names = [p.name.value for p in list(node.params.posonly_params) + list(node.params.params)]
            inner = (names[2], names[3]) if len(names) >= 4 else None
        elif isinstance(node, cst.Comparison):
            if inner is not None and _same_array_at(node, lambda s: _reads(s, inner[0]),
                                                    lambda s: _reads(s, inner[1])):
                return node
            if _same_array_at(node, _new_axis_at(1), _new_axis_at(0)):
                return node
        elif isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            continue  # text: no comparison inside (and a chain of thousands of literals)
        stack.extend((child, inner) for child in reversed(list(cstnodes.children(node))))
    return None


def _same_array_at(comp: cst.Comparison, left_ok, right_ok) -> bool:
    """`a[... x ...] == a[... y ...]`: one array read at two places, the sides in either order."""
    if len(comp.comparisons) != 1 or not isinstance(comp.comparisons[0].operator, cst.Equal):
        return False
    left, right = comp.left, comp.comparisons[0].comparator
    if not (isinstance(left, cst.Subscript) and isinstance(right, cst.Subscript)
            and left.value.deep_equals(right.value)):
        return False
    return (left_ok(left) and right_ok(right)) or (left_ok(right) and right_ok(left))


def _reads(sub: cst.Subscript, name: str) -> bool:
    return any(n.value == name for element in sub.slice if isinstance(element.slice, cst.Index)
               for n in syntax.name_nodes(element.slice.value))


def _new_axis_at(last: int):
    """Whether a subscript's last-but-`last` index is `None` (a new axis), and only that one of
    its last two: `a[:, :, None]` (last=0) against `a[:, None, :]` (last=1)."""
    def test(sub: cst.Subscript) -> bool:
        nones = [isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name)
                 and e.slice.value.value == "None" for e in sub.slice]
        return len(nones) >= 2 and nones[-1 - last] and not nones[-2 + last]
    return test
