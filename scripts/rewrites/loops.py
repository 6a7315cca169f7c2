"""Loops written another way: `for` as `while` (a counter for `range`, else an iterator and
`next`), `while` as `for` over an endless iterator with a break, a comprehension assigned or
returned as a loop that appends, and such a loop as a comprehension."""

from __future__ import annotations

import libcst as cst

from audits.legality import syntax
from rewrites import source


def for_to_while(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return _each(files, _ForToWhile)


def while_to_for(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return _each(files, _WhileToFor)


def comprehension_to_loop(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return _each(files, _ComprehensionToLoop)


def loop_to_comprehension(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return _each(files, _LoopToComprehension)


def _each(files, transformer) -> dict[str, bytes] | None:
    new = {}
    for rel, m in source.modules(files).items():
        names = _Identifiers()
        m.visit(names)
        new[rel] = m.visit(transformer(_Fresh(names.found))).code
    return source.changed(files, new)


class _Identifiers(cst.CSTVisitor):
    def __init__(self):
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)


class _Fresh:
    def __init__(self, taken: set[str]):
        self.taken, self.n = taken, 0

    def __call__(self) -> str:
        while f"_k{self.n}" in self.taken:
            self.n += 1
        self.n += 1
        return f"_k{self.n - 1}"


def _stmt(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


def _block(body: cst.BaseSuite) -> list[cst.BaseStatement]:
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    return [cst.SimpleStatementLine(list(body.body))]


def _assign(target: cst.BaseExpression, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    if isinstance(target, cst.Tuple):
        target = target.with_changes(lpar=[], rpar=[])
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(target)], value)])


def _int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
            and isinstance(node.expression, cst.Integer)):
        return -int(node.expression.value, 0)
    return None


class _ForToWhile(cst.CSTTransformer):
    def __init__(self, fresh):
        self.fresh = fresh

    def leave_For(self, original, updated):
        if updated.asynchronous is not None or updated.orelse is not None:
            return updated
        body = _block(updated.body)
        it = updated.iter
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range" \
                and 1 <= len(it.args) <= 3 and all(a.keyword is None and not a.star for a in it.args):
            args = [a.value for a in it.args]
            start, stop = (args[0], args[1]) if len(args) > 1 else (cst.Integer("0"), args[0])
            step = _int(args[2]) if len(args) == 3 else 1
            if step:
                k, end = self.fresh(), self.fresh()
                loop = cst.While(
                    test=cst.Comparison(cst.Name(k), [cst.ComparisonTarget(
                        cst.LessThan() if step > 0 else cst.GreaterThan(), cst.Name(end))]),
                    body=cst.IndentedBlock([_assign(updated.target, cst.Name(k)),
                                            _stmt(f"{k} += {step}\n"), *body]))
                return cst.FlattenSentinel([
                    _assign(cst.Name(k), start).with_changes(leading_lines=updated.leading_lines),
                    _assign(cst.Name(end), stop), loop])
        k = self.fresh()
        head = cst.parse_statement("try:\n    pass\nexcept StopIteration:\n    break\n")
        head = head.with_changes(body=cst.IndentedBlock([_assign(updated.target, cst.parse_expression(f"next({k})"))]))
        loop = cst.While(test=cst.Name("True"), body=cst.IndentedBlock([head, *body]))
        first = _assign(cst.Name(k), cst.Call(cst.Name("iter"), [cst.Arg(it)]))
        return cst.FlattenSentinel([first.with_changes(leading_lines=updated.leading_lines), loop])


class _WhileToFor(cst.CSTTransformer):
    def __init__(self, fresh):
        self.fresh = fresh

    def leave_While(self, original, updated):
        if updated.orelse is not None:
            return updated
        test = updated.test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        stop = cst.If(test=cst.UnaryOperation(cst.Not(), test),
                      body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Break()])]))
        return cst.For(target=cst.Name(self.fresh()), iter=cst.parse_expression("iter(int, 1)"),
                       body=cst.IndentedBlock([stop, *_block(updated.body)]),
                       leading_lines=updated.leading_lines)


class _Substitute(cst.CSTTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)  # only the object, never the attribute's name

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original, updated):
        return updated.with_changes(value=self.names.get(original.value, original.value))


class _ComprehensionToLoop(cst.CSTTransformer):
    def __init__(self, fresh):
        self.fresh = fresh
        self.scopes: list[str] = []  # "class" or "def", innermost last: a class body is left alone

    def visit_ClassDef(self, node):
        self.scopes.append("class")

    def leave_ClassDef(self, original, updated):
        self.scopes.pop()
        return updated

    def visit_FunctionDef(self, node):
        self.scopes.append("def")

    def leave_FunctionDef(self, original, updated):
        self.scopes.pop()
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1:
            return updated
        s = updated.body[0]
        value = s.value if isinstance(s, (cst.Assign, cst.Return)) else None
        if not isinstance(value, (cst.ListComp, cst.SetComp, cst.DictComp)) or self.scopes[-1:] == ["class"]:
            return updated
        clauses = []
        clause = value.for_in
        while clause is not None:
            if clause.asynchronous is not None:
                return updated
            clauses.append(clause)
            clause = clause.inner_for_in
        names = [n for c in clauses for n in syntax.names(c.target)]
        sub = _Substitute({n: self.fresh() for n in names})
        acc = self.fresh()
        if isinstance(value, cst.DictComp):
            key = cst.SubscriptElement(cst.Index(value.key.visit(sub)))
            init, add = "{}", _assign(cst.Subscript(cst.Name(acc), [key]), value.value.visit(sub))
        else:
            call = f"{acc}.{'append' if isinstance(value, cst.ListComp) else 'add'}"
            init = "[]" if isinstance(value, cst.ListComp) else "set()"
            append = cst.Call(cst.parse_expression(call), [cst.Arg(value.elt.visit(sub))])
            add = cst.SimpleStatementLine([cst.Expr(append)])
        inner: cst.BaseStatement = add
        for i, c in reversed(list(enumerate(clauses))):
            for cond in reversed(c.ifs):
                inner = cst.If(test=_grouped(cond.test.visit(sub)), body=cst.IndentedBlock([inner]))
            it = c.iter if i == 0 else c.iter.visit(sub)  # the first iterable is read outside
            inner = cst.For(target=c.target.visit(sub), iter=_grouped(it),
                            body=cst.IndentedBlock([inner]))
        first = _stmt(f"{acc} = {init}\n").with_changes(leading_lines=updated.leading_lines)
        last = cst.SimpleStatementLine([s.with_changes(value=cst.Name(acc))])
        return cst.FlattenSentinel([first, inner, last])


def _grouped(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` in parentheses where it spans lines: inside the comprehension's brackets it could,
    in an `if` or `for` header it cannot."""
    if expr.lpar or "\n" not in cst.Module([]).code_for_node(expr):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


class _LoopToComprehension(cst.CSTTransformer):
    """`xs = []` then `for t in it: [if c:] xs.append(e)` becomes `xs = [e for t in it [if c]]`,
    where the loop's names are not read after it."""

    def __init__(self, fresh):
        pass

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._fold(list(updated.body)))

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._fold(list(updated.body)))

    def _fold(self, body):
        out, i = [], 0
        while i < len(body):
            folded = self._pair(body, i)
            if folded is not None:
                out.append(folded)
                i += 2
            else:
                out.append(body[i])
                i += 1
        return out

    def _pair(self, body, i):
        if i + 1 >= len(body):
            return None
        first, loop = body[i], body[i + 1]
        if not (isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1
                and isinstance(first.body[0], cst.Assign)):
            return None
        assign = first.body[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) \
                or not (isinstance(assign.value, cst.List) and not assign.value.elements):
            return None
        name = assign.targets[0].target.value
        if not isinstance(loop, cst.For) or loop.orelse is not None or loop.asynchronous is not None:
            return None
        inner = _block(loop.body)
        cond = None
        if len(inner) == 1 and isinstance(inner[0], cst.If) and inner[0].orelse is None:
            cond = inner[0].test
            inner = _block(inner[0].body)
        if len(inner) != 1 or not isinstance(inner[0], cst.SimpleStatementLine) or len(inner[0].body) != 1:
            return None
        expr = inner[0].body[0]
        if not (isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call) and len(expr.value.args) == 1
                and expr.value.args[0].keyword is None and not expr.value.args[0].star
                and isinstance(expr.value.func, cst.Attribute) and expr.value.func.attr.value == "append"
                and isinstance(expr.value.func.value, cst.Name) and expr.value.func.value.value == name):
            return None
        element = expr.value.args[0].value
        loop_names = syntax.names(loop.target)
        reads = _Identifiers()
        for later in body[i + 2:]:
            later.visit(reads)
        used = _Identifiers()
        element.visit(used)
        if cond is not None:
            cond.visit(used)
        if reads.found & set(loop_names) or name in used.found or _has_yield_or_await(element):
            return None
        comp = cst.ListComp(elt=element, for_in=cst.CompFor(
            target=loop.target, iter=loop.iter, ifs=[cst.CompIf(cond)] if cond is not None else []))
        return first.with_changes(body=[assign.with_changes(value=comp)])


def _has_yield_or_await(node) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_Yield(self, n):
            found.append(n)

        def visit_Await(self, n):
            found.append(n)

    node.visit(V())
    return bool(found)
