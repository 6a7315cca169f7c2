"""Small questions about syntax: which names an expression reads, what a statement assigns."""

from __future__ import annotations

import libcst as cst

from audits.pyversion import cstnodes


def unpacked(node: cst.Assign):
    """The values of `a, b = x, y` (every target a tuple of the same length), else None."""
    values = elements(node.value, (cst.Tuple, cst.List))
    return values if values is not None and unpacks_into(node, len(values)) else None


def unpacks_into(node: cst.Assign, count: int) -> bool:
    """Every target of the assignment is a tuple or list of `count` plain elements."""
    return all(elements(target.target, (cst.Tuple, cst.List)) is not None
               and len(target.target.elements) == count for target in node.targets)


def elements(node: cst.BaseExpression, kinds=(cst.Tuple,)) -> list[cst.BaseExpression] | None:
    """The elements of `a, b` (a node of `kinds` with no starred element), else None."""
    if not isinstance(node, kinds) or any(isinstance(e, cst.StarredElement) for e in node.elements):
        return None
    return [e.value for e in node.elements]


def names(node) -> list[str]:
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for e in node.elements for n in names(e.value)]
    return []


def name_nodes(node):
    """Names read in an expression, through operators, calls, attributes, subscripts and
    literals of containers (enough to see `total = total + x` or which names a formula uses)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.Name):
            yield cur
        elif isinstance(cur, cst.BinaryOperation):
            stack += [cur.left, cur.right]
        elif isinstance(cur, cst.UnaryOperation):
            stack.append(cur.expression)
        elif isinstance(cur, cst.Call):
            stack += [cur.func] + [a.value for a in cur.args]
        elif isinstance(cur, (cst.Attribute, cst.Subscript)):
            stack.append(cur.value)
        elif isinstance(cur, (cst.List, cst.Tuple)):
            stack += [e.value for e in cur.elements]


def descent_step(target, value) -> bool:
    """`w = w - lr * g`, also clamped (`(w - lr * g).clamp(-c, c)`): a hand-written gradient step
    on the name `w`."""
    if not isinstance(target, cst.Name):
        return False
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in ("clamp", "clamp_", "clip"):
        value = value.func.value
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract) \
        and isinstance(value.left, cst.Name) and value.left.value == target.value


def root_name(node) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def called_name(node) -> str | None:
    """The last name of the function a call calls (`torch.expm1(x)`: expm1), else None."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def is_zero(value) -> bool:
    """`0`, `0.0`, `torch.zeros(...)`, `torch.zeros_like(...)`: a total started afresh."""
    return number(value) == 0 or called_name(value) in ("zeros", "zeros_like")


def is_test(value) -> bool:
    """A comparison, `and` / `or`, or `not`: an expression whose value is a truth value."""
    return isinstance(value, (cst.Comparison, cst.BooleanOperation)) or (
        isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Not))


def is_false(test) -> bool:
    return (isinstance(test, cst.Name) and test.value == "False") or (
        isinstance(test, cst.Integer) and test.value == "0")


def number(node) -> float | None:
    """The value of a number literal, signed or not (`2`, `0.5`, `-1`), else None."""
    sign = 1
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        sign, node = -1, node.expression
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return sign * float(node.evaluated_value)
        except (ValueError, OverflowError):
            return None
    return None


_COMPARE = {cst.LessThan: float.__lt__, cst.LessThanEqual: float.__le__, cst.GreaterThan: float.__gt__,
            cst.GreaterThanEqual: float.__ge__, cst.Equal: float.__eq__, cst.NotEqual: float.__ne__}


def compare(operator, left: float, right: float) -> bool | None:
    """`left OP right` for a comparison operator of numbers; None for `is`, `in` and the like."""
    op = _COMPARE.get(type(operator))
    return None if op is None else op(float(left), float(right))


def leaves(stmts) -> bool:
    """Does the block end by leaving the function: `return`, `raise`, `sys.exit(...)`?"""
    if not stmts or not isinstance(stmts[-1], cst.SimpleStatementLine):
        return False
    last = stmts[-1].body[-1]
    if isinstance(last, (cst.Return, cst.Raise)):
        return True
    if isinstance(last, cst.Expr) and isinstance(last.value, cst.Call):
        func = last.value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        return name in ("exit", "_exit", "quit")
    return False


def exit_tests(loop: cst.For | cst.While) -> list[cst.BaseExpression]:
    """The tests that end a loop: a `while`'s own, and each `if C: break` among the statements of
    its body (`for _ in iter(int, 1): if not (C): break`, `while True: ...; if i >= n: break`)."""
    tests = [loop.test] if isinstance(loop, cst.While) else []
    for stmt in loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.If) and stmt.orelse is None and _only_break(stmt.body):
            tests.append(stmt.test)
    return tests


def _only_break(block) -> bool:
    stmts = block.body if isinstance(block, cst.IndentedBlock) else [block]
    return len(stmts) == 1 and isinstance(stmts[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)) \
        and len(stmts[0].body) == 1 and isinstance(stmts[0].body[0], cst.Break)


def endless(loop: cst.For | cst.While) -> bool:
    """A `for` over an iterable that never runs out (`iter(f, sentinel)`, `itertools.count()`):
    a `while` in another form, whose end is a break and whose position is its counters'."""
    if isinstance(loop, cst.While):
        return True
    it = loop.iter
    if not isinstance(it, cst.Call):
        return False
    func = it.func.attr.value if isinstance(it.func, cst.Attribute) else getattr(it.func, "value", None)
    return (func == "iter" and len(it.args) == 2) or func in ("count", "repeat") and len(it.args) <= 1


def counters(loop: cst.For | cst.While) -> tuple[str, ...]:
    """The names a test that ends the loop compares that its body binds again (`while i < n: ...;
    i += 1`, `while start < total: ...; start = end`, `for _ in ...: if i >= n: break`): the loop's
    counters, which step through values as the target of a `for` over a range does."""
    compared: set[str] = set()
    stack = exit_tests(loop)
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.BooleanOperation):
            stack += [cur.left, cur.right]
        elif isinstance(cur, cst.UnaryOperation):
            stack.append(cur.expression)
        elif isinstance(cur, cst.Comparison):
            for side in [cur.left] + [c.comparator for c in cur.comparisons]:
                compared |= {n.value for n in name_nodes(side)}
    return tuple(sorted(compared & _bound(loop.body)))


def _bound(block: cst.CSTNode) -> set[str]:
    """Names a block binds by assignment, outside the functions, classes and lambdas it defines
    (a walk by the nodes' fields: libcst's visitors rebuild and re-check every node)."""
    found: set[str] = set()
    stack = [block]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.AssignTarget):
            found.update(names(node.target))
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            found.update(names(node.target))
        stack.extend(cstnodes.children(node))
    return found
