"""Code shapes the rules recognise by structure, not by name: a token stream split into inputs and
the targets one position later, a previous-token mixing path, a tokenizer byte table.

Each takes libcst nodes and the script (for expression text) and answers one question.
"""

from __future__ import annotations

import libcst as cst

from audits.legality import apis, imports
from audits.pyversion import cstnodes

# Tensor methods that change dtype, device or layout but not which tokens a value holds.
_CARRIERS = {"to", "long", "int", "float", "double", "cuda", "cpu", "numpy", "contiguous",
             "clone", "detach", "view", "reshape", "flatten", "squeeze", "unsqueeze", "astype",
             "type", "copy", "ravel", "tolist"}


_CONVERSIONS = {"int", "float", "tuple", "list", "torch.from_numpy", "torch.tensor", "torch.as_tensor",
                "np.asarray", "np.array", "numpy.asarray", "numpy.array"}


def unwrap(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The value under conversions: `torch.from_numpy(ids[p:q]).long()` -> `ids[p:q]`."""
    while True:
        stripped = strip_carriers(expr)
        if (isinstance(stripped, cst.Call) and len(stripped.args) == 1
                and imports.dotted(stripped.func) in _CONVERSIONS):
            expr = stripped.args[0].value
            continue
        return stripped


def strip_carriers(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`x[1:].to(device).long()` -> `x[1:]`."""
    while (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
           and expr.func.attr.value in _CARRIERS):
        expr = expr.func.value
    return expr


def _bound(expr: cst.BaseExpression | None, code, end: bool) -> tuple[str, int]:
    """A slice bound as (symbolic part, integer offset): `i+1` -> ("i", 1); None -> ("", 0) or
    ("END", 0); `-1` as an upper bound -> ("END", -1)."""
    if expr is None:
        return ("END" if end else "", 0)
    if isinstance(expr, cst.Integer):
        return ("", int(expr.value, 0))
    if (isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus)
            and isinstance(expr.expression, cst.Integer)):
        value = -int(expr.expression.value, 0)
        return ("END", value) if end else ("", value)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.right, cst.Integer):
        sign = {cst.Add: 1, cst.Subtract: -1}.get(type(expr.operator))
        if sign is not None:
            return (imports.dotted(expr.left) or code(expr.left), sign * int(expr.right.value, 0))
    return (imports.dotted(expr) or code(expr), 0)


def _reaches_back(expr: cst.BaseExpression | None) -> bool:
    """`s - w + k`, `p - (w - k)`: a bound some computed distance before a position (where an
    n-gram window's context tokens start, read as a slice of the flat token array)."""
    while isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        if isinstance(expr.operator, cst.Subtract) and not isinstance(expr.right, cst.Integer):
            return True
        expr = expr.left
    return False


def _before(expr: cst.BaseExpression) -> str | None:
    """`p - (w - k)`: a position some computed distance before `p` (a context token of an n-gram
    window read from the flat token array); None for any other index."""
    if (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract)
            and not isinstance(expr.right, cst.Integer)):
        return imports.dotted(expr.left)
    return None


def index_shape(sub: cst.Subscript, code) -> list[tuple]:
    """Per subscript element: ("all",), ("slice", lower, upper, reaches back) or ("index", bound)."""
    shape = []
    for element in sub.slice:
        s = element.slice
        if isinstance(s, cst.Slice):
            if s.lower is None and s.upper is None and s.step is None:
                shape.append(("all",))
            else:
                shape.append(("slice", _bound(s.lower, code, False), _bound(s.upper, code, True),
                              _reaches_back(s.lower)))
        elif isinstance(s, cst.Index) and _before(s.value) is not None:
            shape.append(("index_before", _before(s.value)))
        elif isinstance(s, cst.Index):
            shape.append(("index", _bound(s.value, code, False)))
        else:
            shape.append(("other",))
    return shape


def renamed(shape: list[tuple], rename) -> list[tuple]:
    """The shape with each position's name passed through `rename` (a subset to its superset)."""
    out = []
    for part in shape:
        if part[0] == "index" and part[1][0]:
            part = ("index", (rename(part[1][0]), part[1][1]))
        elif part[0] == "index_before" and part[1] is not None:
            part = ("index_before", rename(part[1]))
        out.append(part)
    return out


def one_later(later: list[tuple], earlier: list[tuple]) -> bool:
    """Does `later` select the positions one after those `earlier` selects (targets vs inputs:
    `t[1:]` vs `t[:-1]`, `t[s+1:e+1]` vs `t[s:e]`, `t[p]` vs `t[p-k:p]`, `t[p]` vs the context
    tokens `t[p - (w - k)]` of an n-gram window)? Same rank, all other elements equal."""
    if len(later) != len(earlier) or later == earlier:
        return False
    differing = [(a, b) for a, b in zip(later, earlier) if a != b]
    if len(differing) != 1:
        return False
    a, b = differing[0]
    if a[0] == "slice" and b[0] == "slice":
        (la, ua), (lb, ub) = a[1:3], b[1:3]
        return la[0] == lb[0] and ua[0] == ub[0] and la[1] == lb[1] + 1 and ua[1] == ub[1] + 1
    if a[0] == "index" and b[0] == "slice":
        return a[1] == b[2]
    if a[0] == "index" and b[0] == "index_before":
        return b[1] is not None and a[1] == (b[1], 0)
    return False


def context_by_position(shape: list[tuple]) -> bool:
    """`t[p - (w - k)]`, `t[s - w + k:...]`, `t[p - 1]`: n-gram context tokens read by position
    from the flat token array."""
    return any(part[0] == "index_before" or (part[0] == "slice" and part[3])
               or (part[0] == "index" and part[1][0] not in ("", "END") and part[1][1] < 0)
               for part in shape)


def next_position(shape: list[tuple]) -> bool:
    """`t[p + 1]`, `t[s + 1:...]`: the tokens one or more positions after `p` (or `s`). In code
    that reads its n-gram contexts by position from the same array, those are the tokens being
    predicted."""
    if len(shape) != 1 or shape[0][0] not in ("index", "slice"):
        return False
    name, offset = shape[0][1]
    return name != "" and offset >= 1


def position_after(later: list[tuple], earlier: list[tuple]) -> bool:
    """`t[p]` vs `t[p - 1]`: one position after another. Alone this says nothing about context
    and target; in n-gram code that reads its context by position (`context_by_position`), the
    last such read is the token being predicted."""
    if len(later) != 1 or len(earlier) != 1 or later[0][0] != "index" or earlier[0][0] != "index":
        return False
    (a, i), (b, j) = later[0][1], earlier[0][1]
    return a == b not in ("", "END") and i == j + 1


def previous_positions(node: cst.Subscript) -> bool:
    """`x[:, :-1]`: every position but the last, i.e. the previous token's, once shifted right."""
    for element in node.slice:
        s = element.slice
        if (isinstance(s, cst.Slice) and s.lower is None and s.step is None
                and isinstance(s.upper, cst.UnaryOperation) and isinstance(s.upper.operator, cst.Minus)
                and isinstance(s.upper.expression, cst.Integer) and s.upper.expression.value == "1"):
            return True
    return False


def mentions(expr: cst.BaseExpression, spelled: str) -> bool:
    """Does `expr` read the value named `spelled` (itself or a slice of it)?"""
    stack = [expr]
    while stack:
        cur = stack.pop()
        if isinstance(cur, (cst.Name, cst.Attribute)) and imports.dotted(cur) == spelled:
            return True
        if isinstance(cur, cst.Subscript):
            stack.append(cur.value)
        elif isinstance(cur, cst.BinaryOperation):
            stack += [cur.left, cur.right]
        elif isinstance(cur, cst.UnaryOperation):
            stack.append(cur.expression)
        elif isinstance(cur, cst.Call):
            stack += [a.value for a in cur.args]
            if isinstance(cur.func, cst.Attribute):
                stack.append(cur.func.value)
    return False


def piece_table_loop(loop: cst.For | cst.While, literal) -> dict | None:
    """A loop over token ids that builds a bytes-per-token table from tokenizer pieces: which of
    the three cases (byte-fallback pieces, the leading-space marker, plain pieces) it handles.
    `literal` gives the string a module-level name stands for (`SPACE = "\\u2581"`)."""
    calls = [n for n in cstnodes.walk(loop.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)]
    methods = {call.func.attr.value for call in calls}
    if not methods & apis.PIECE_METHODS or "encode" not in methods:
        return None
    nodes = [literal(n) for n in cstnodes.walk(loop.body) if isinstance(n, (cst.SimpleString, cst.Name))]
    strings = {n.evaluated_value for n in nodes
               if isinstance(n, cst.SimpleString) and isinstance(n.evaluated_value, str)}
    return {
        "byte_fallback": "is_byte" in methods or any(s.startswith("<0x") for s in strings),
        "leading_space": any("\u2581" in s for s in strings),
        "space_twice": _space_in_table_and_flagged(loop),
    }


def _space_in_table_and_flagged(loop: cst.For | cst.While) -> bool:
    """Does the loop count a piece's leading space in the table (`len(piece[1:].encode()) + 1`)
    and also mark the piece in a flag table (`has_space[i] = True`), which the evaluation adds
    as one more byte? Then every space is counted twice."""
    assigns = [n for n in cstnodes.walk(loop.body) if isinstance(n, cst.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0].target, cst.Subscript)]
    flagged = any(_is_name(a.value, "True") for a in assigns)
    counted = any(_plus_one(a.value) and any(isinstance(n, cst.Attribute) and n.attr.value == "encode"
                                             for n in cstnodes.walk(a.value))
                  for a in assigns)
    return flagged and counted


def _plus_one(value) -> bool:
    """`x + 1` or `1 + x`."""
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and any(
        isinstance(side, cst.Integer) and side.value == "1" for side in (value.left, value.right))


def _is_name(node, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name
