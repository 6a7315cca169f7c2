"""Syntax features of newer Pythons, found by walking a libcst tree.

libcst parses the grammar of every Python 3 at once (its `python_version` setting rejects
nothing), so the tree says what the code uses and this walk says which Python first accepts it.
f-strings are not judged here: whether 3.10 accepts one depends on its tokens (`lex310`,
`fstring310`); the walk only lists where string literals start.

Each feature names the node where CPython 3.10 stops (`anchor`, its start or end, plus `shift`
characters), the message 3.10 prints there and whether that is 3.10's generic "invalid syntax"
(checked against a real CPython 3.10 by tests/audits/pyversion/).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from audits.pyversion.cstnodes import children

Anchor = tuple[cst.CSTNode, bool]  # a node, and whether the place is its end (else its start)

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_LOOPS = (cst.For, cst.While)
_STRINGS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)
# Containers whose children sit inside brackets (Call and Subscript only past their first part).
_BRACKETED = (cst.List, cst.Set, cst.Dict, *_COMPREHENSIONS, cst.GeneratorExp, cst.Parameters,
              cst.MatchList, cst.MatchMapping, cst.FormattedStringExpression)
# Expressions that end with an operand and start further left (pegen's `disjunction` levels).
_LEFT_EXTENDING = (cst.BinaryOperation, cst.BooleanOperation, cst.Comparison, cst.UnaryOperation,
                   cst.Await)


# Node types whose children can sit in another context than the node (others pass theirs on).
_CONTEXT_TYPES = {cst.Call, cst.Subscript, cst.ClassDef, cst.MatchClass, cst.MatchTuple, *_BRACKETED,
                  cst.FunctionDef, cst.For, cst.With, cst.Match, cst.CompFor, cst.CompIf,
                  cst.StarredDictElement, cst.TemplatedStringExpression, cst.Lambda, cst.GeneratorExp,
                  cst.Try, cst.TryStar, cst.While}
_INSPECTED = {*_STRINGS, cst.ExceptStarHandler, cst.ExceptHandler, cst.Index, cst.Param, cst.FunctionDef,
              cst.ClassDef, cst.TypeAlias, cst.TypeParam, cst.TemplatedString, cst.Return, cst.Break,
              cst.Continue, cst.Match, cst.With, cst.Set, *_COMPREHENSIONS}


@dataclasses.dataclass(frozen=True)
class Retry:
    """For `x[*a]`, what 3.10's second parser pass re-reads as `a [list display...]`, as if a
    comma were missing: where `a` starts, where the subscripted value ends, where the whole
    expression ends, whether the value is a bare name, whether it all sits inside brackets."""

    a_start: Anchor
    value_end: Anchor
    b_end: Anchor
    bare_name: bool
    in_brackets: bool


@dataclasses.dataclass(frozen=True)
class Feature:
    what: str  # for people: "an `except*` clause"
    ref: str  # where it was introduced: "PEP 654"
    needs: tuple[int, int]  # the first Python that accepts it
    anchor: cst.CSTNode  # 3.10's parser stops at this node's start (or end, with at_end) + shift
    at_end: bool = False
    shift: int = 0
    report: Anchor | None = None  # where the error points, when not at the anchor
    error: str = "invalid syntax"  # what CPython 3.10 prints
    generic: bool = True  # 3.10's generic "invalid syntax", which a later tokenizer error replaces
    compile_stage: bool = False  # found by the compiler, after the whole file has parsed
    warning: bool = False  # accepted; the Python named by `needs` warns about it
    retry: Retry | None = None
    t_string: bool = False


@dataclasses.dataclass(frozen=True)
class StringAtom:
    """A string literal (or implicitly concatenated ones) holding an f-string, outside any
    f-string field: the unit 3.10 tokenizes and checks on its own."""

    node: cst.CSTNode
    in_brackets: bool


@dataclasses.dataclass(frozen=True)
class _Context:
    async_function: bool = False  # the nearest function scope is `async def`
    comprehension: bool = False  # the nearest scope is a comprehension
    in_finally: bool = False  # inside a `finally:` block of the current function
    loop_in_finally: bool = False  # inside a loop that is itself inside that `finally:`
    brackets: bool = False  # inside (), [] or {}, where newlines do not end a statement
    in_string: bool = False  # inside an f-string or t-string field
    # In a statement header that 3.10 must follow with ':': "first" where its first pass forces
    # the ':' (`for ... in X:`, `def f() -> X:`, `class C(X):`), "with" where its second pass
    # does (`with X:`). `colon_at`: the outermost bracket opened in X (where a cut-short X
    # ends), `blocked`: that bracket starts X, so nothing of X parses and no ':' is forced.
    header: str | None = None
    colon_at: Anchor | None = None
    blocked: bool = False
    blocked_at: Anchor | None = None  # where a blocked `def ... -> X` reports it: the `->`
    leftmost: bool = False  # on the leftmost path down from the header's expression
    bare_disjunction: bool = False  # pegen reads a `disjunction` here, never an `expression`


@dataclasses.dataclass
class Walk:
    features: list[Feature]
    atoms: list[StringAtom]

    def anchors(self, with_atoms: bool) -> list[cst.CSTNode]:
        """Every node whose offset the caller needs."""
        nodes = [atom.node for atom in self.atoms] if with_atoms else []
        for f in self.features:
            nodes.append(f.anchor)
            if f.report is not None:
                nodes.append(f.report[0])
            if f.retry is not None:
                nodes.extend(anchor[0] for anchor in (f.retry.a_start, f.retry.value_end, f.retry.b_end))
        return nodes


def walk(module: cst.Module) -> Walk:
    """Every syntax feature newer than 3.8, and every string atom holding an f-string."""
    result = Walk([], [])
    parents: dict[int, cst.CSTNode] = {}
    contexts: dict[int, _Context] = {}  # per Subscript: the context it sits in
    stack: list[tuple[cst.CSTNode, _Context]] = [(module, _Context())]
    while stack:
        node, ctx = stack.pop()
        kind = type(node)
        if kind is cst.Subscript:
            contexts[id(node)] = ctx
        _inspect(node, kind, ctx, parents, contexts, result)
        same = kind not in _CONTEXT_TYPES and not getattr(node, "lpar", None) and not ctx.leftmost
        for index, child in enumerate(children(node)):
            parents[id(child)] = node
            stack.append((child, ctx if same else _child_context(node, child, ctx, index == 0)))
    return result


def _child_context(node: cst.CSTNode, child: cst.CSTNode, ctx: _Context, first: bool) -> _Context:
    opens = bool(getattr(node, "lpar", None)) or _opens_brackets(node, child)
    if opens and not ctx.brackets:
        ctx = dataclasses.replace(ctx, brackets=True)
    if ctx.header is not None and ctx.colon_at is None and opens:
        # An atom's bracket (parentheses, a display) at the very start parses to nothing; a call's
        # or subscript's bracket follows a value that parses.
        atom = bool(getattr(node, "lpar", None)) or type(node) not in (cst.Call, cst.Subscript)
        ctx = dataclasses.replace(ctx, colon_at=_opener(node, child), blocked=ctx.leftmost and atom)
    if ctx.leftmost and not first:
        ctx = dataclasses.replace(ctx, leftmost=False)
    header = _header(node, child)
    if header is not None:
        kind, colon_at, blocked_at = header
        ctx = dataclasses.replace(ctx, header=kind, colon_at=colon_at, blocked=False, blocked_at=blocked_at,
                                  leftmost=True)
    elif type(node) in (cst.FunctionDef, cst.ClassDef, cst.For, cst.With, cst.Match):
        ctx = dataclasses.replace(ctx, header=None, colon_at=None, blocked=False, leftmost=False)
    if isinstance(node, cst.CompFor) and child is node.iter or isinstance(node, cst.CompIf) \
            or isinstance(node, cst.StarredDictElement):
        ctx = dataclasses.replace(ctx, bare_disjunction=True)
    elif ctx.bare_disjunction and opens:
        ctx = dataclasses.replace(ctx, bare_disjunction=False)
    if isinstance(node, (cst.FormattedStringExpression, cst.TemplatedStringExpression)):
        ctx = dataclasses.replace(ctx, in_string=True)
    if isinstance(node, cst.FunctionDef):
        if child is node.body:
            return _Context(async_function=node.asynchronous is not None)
        return ctx
    if isinstance(node, (cst.Lambda, cst.ClassDef)):
        return dataclasses.replace(ctx, async_function=False, comprehension=False, in_finally=False) \
            if child is node.body else ctx
    if isinstance(node, (*_COMPREHENSIONS, cst.GeneratorExp)):
        # The first iterable runs in the enclosing scope; the rest in the comprehension's own.
        if child is node.for_in:
            return ctx
        return dataclasses.replace(ctx, comprehension=True)
    if isinstance(node, cst.CompFor) and child is not node.iter:
        return dataclasses.replace(ctx, comprehension=True)
    if isinstance(node, (cst.Try, cst.TryStar)) and child is node.finalbody:
        return dataclasses.replace(ctx, in_finally=True, loop_in_finally=False)
    if isinstance(node, _LOOPS) and ctx.in_finally and child is node.body:
        return dataclasses.replace(ctx, loop_in_finally=True)
    return ctx


def _header(node: cst.CSTNode, child: cst.CSTNode) -> tuple[str, Anchor | None, Anchor | None] | None:
    """For an expression in a statement header: its kind ("first" or "with", see _Context),
    where "expected ':'" is reported from the start (a class's `(`), and where it is reported
    when nothing of the expression parses (a function's `->`)."""
    kind = type(node)
    if kind is cst.ClassDef and (child in node.bases or child in node.keywords):
        return "first", (node.lpar, False), None
    if kind is cst.FunctionDef and child is node.returns:
        return "first", None, (node.returns.whitespace_before_indicator, True)
    if kind is cst.For and child is node.iter:
        return "first", None, None
    if kind is cst.With and child in node.items:
        return "with", (node.lpar, False) if type(node.lpar) is cst.LeftParen else None, None
    return None


def _opener(node: cst.CSTNode, child: cst.CSTNode) -> Anchor:
    """The opening bracket of `node` that `child` sits in."""
    if getattr(node, "lpar", None):
        return node.lpar[0], False
    if isinstance(node, cst.Call):
        return node.whitespace_after_func, True
    for name in ("lbracket", "lbrace"):
        if hasattr(node, name):
            return getattr(node, name), False
    return node, False


def _opens_brackets(node: cst.CSTNode, child: cst.CSTNode) -> bool:
    if isinstance(node, cst.Call):
        return child is not node.func
    if isinstance(node, cst.Subscript):
        return child is not node.value
    if isinstance(node, cst.ClassDef):
        return child in node.bases or child in node.keywords
    if isinstance(node, (cst.MatchClass, cst.MatchTuple)):
        return True
    return isinstance(node, _BRACKETED)


def _inspect(node, kind: type, ctx: _Context, parents: dict, contexts: dict, result: Walk) -> None:
    if kind not in _INSPECTED:
        return
    found = result.features
    if kind in _STRINGS and not ctx.in_string and type(
            parents.get(id(node))) is not cst.ConcatenatedString and _holds_fstring(node):
        result.atoms.append(StringAtom(node, ctx.brackets or bool(node.lpar)))
    elif isinstance(node, cst.ExceptStarHandler):
        found.append(Feature("an `except*` clause", "PEP 654", (3, 11), node.whitespace_after_except,
                             at_end=True))
        _except_types(node, found)
    elif isinstance(node, cst.ExceptHandler):
        _except_types(node, found)
    elif isinstance(node, cst.Index):
        if node.star is not None:
            found.append(_starred_subscript(node, ctx, parents, contexts))
        if isinstance(node.value, cst.NamedExpr) and not node.value.lpar:
            found.append(Feature("an unparenthesized `:=` in a subscript", "bpo-42316", (3, 10), node.value))
    elif isinstance(node, cst.Param):
        annotation = node.annotation
        if node.star == "*" and annotation is not None and isinstance(annotation.annotation, cst.StarredElement):
            found.append(Feature("a starred annotation on `*args` (`*args: *Ts`)", "PEP 646", (3, 11),
                                 annotation.annotation))
    elif isinstance(node, cst.FunctionDef):
        if node.type_parameters is not None:
            found.append(Feature("a type parameter list on a function (`def f[T]()`)", "PEP 695", (3, 12),
                                 node.type_parameters))
        _decorators(node, found)
    elif isinstance(node, cst.ClassDef):
        if node.type_parameters is not None:
            found.append(Feature("a type parameter list on a class (`class C[T]`)", "PEP 695", (3, 12),
                                 node.type_parameters, error="expected ':'", generic=False))
        _decorators(node, found)
    elif isinstance(node, cst.TypeAlias):
        found.append(Feature("a `type` statement", "PEP 695", (3, 12), node.name))
    elif isinstance(node, cst.TypeParam):
        if node.default is not None:
            found.append(Feature("a type parameter default (`[T = int]`)", "PEP 696", (3, 13), node.default))
    elif isinstance(node, cst.TemplatedString):
        prefix = len(node.start.rstrip("'\""))
        anchor: Anchor = (node.lpar[-1], True) if node.lpar else (node, False)
        found.append(Feature("a t-string", "PEP 750", (3, 14), anchor[0], at_end=anchor[1], shift=prefix,
                             t_string=True))
    elif isinstance(node, (cst.Return, cst.Break, cst.Continue)):
        _finally_exit(node, ctx, found)
    elif isinstance(node, cst.Match):
        found.append(Feature("a `match` statement", "PEP 634", (3, 10), node))
    elif isinstance(node, cst.With):
        if isinstance(node.lpar, cst.LeftParen) and any(item.asname is not None for item in node.items):
            found.append(Feature("parenthesized context managers", "bpo-12782", (3, 10), node.lpar))
    elif isinstance(node, cst.Set):
        for element in node.elements:
            if isinstance(element.value, cst.NamedExpr) and not element.value.lpar:
                found.append(Feature("an unparenthesized `:=` in a set", "bpo-42316", (3, 10), element.value))
    elif isinstance(node, _COMPREHENSIONS) and ctx.comprehension and ctx.async_function and _is_async(node):
        found.append(Feature("an asynchronous comprehension inside a comprehension", "bpo-33346", (3, 11),
                             node, error="asynchronous comprehension outside of an asynchronous function",
                             generic=False, compile_stage=True))


def _holds_fstring(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.FormattedString):
        return True
    if isinstance(node, cst.ConcatenatedString):
        return _holds_fstring(node.left) or _holds_fstring(node.right)
    return False


def _except_types(handler, found: list[Feature]) -> None:
    kind = handler.type
    if isinstance(kind, cst.Tuple) and not kind.lpar:
        found.append(Feature("several exception types without parentheses (`except A, B:`)", "PEP 758",
                             (3, 14), kind, error="multiple exception types must be parenthesized",
                             generic=False))


def _decorators(node, found: list[Feature]) -> None:
    for decorator in node.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        while isinstance(expr, cst.Attribute):
            expr = expr.value
        if not isinstance(expr, cst.Name) or expr.lpar:
            found.append(Feature("a decorator that is not a dotted name or a call of one", "PEP 614", (3, 9),
                                 decorator.decorator))


def _finally_exit(node, ctx: _Context, found: list[Feature]) -> None:
    if not ctx.in_finally:
        return
    if isinstance(node, cst.Return) or not ctx.loop_in_finally:
        word = {cst.Return: "return", cst.Break: "break", cst.Continue: "continue"}[type(node)]
        found.append(Feature(f"`{word}` that leaves a `finally` block", "PEP 765", (3, 14), node,
                             warning=True))


def _is_async(comp) -> bool:
    """A comprehension that needs a coroutine: `async for`, or `await` in its own scope."""
    stack: list[cst.CSTNode] = [comp]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.CompFor) and node.asynchronous is not None:
            return True
        if isinstance(node, cst.Await):
            return True
        for child in children(node):
            if isinstance(child, (*_COMPREHENSIONS, cst.GeneratorExp, *_SCOPES)):
                continue  # their own scopes
            if node is comp.for_in and child is comp.for_in.iter:
                continue  # the first iterable runs in the enclosing scope
            stack.append(child)
    return False


def _starred_subscript(index: cst.Index, ctx: _Context, parents: dict, contexts: dict) -> Feature:
    """`x[*a]`: 3.10's message depends on where the subscript sits (checked case by case
    against a real 3.10)."""
    what, ref = "a starred expression in a subscript (`x[*a]`)", "PEP 646"
    subscript = _enclosing_subscript(index, parents)
    outer = contexts.get(id(subscript), _Context())
    retry = _retry(subscript, parents, outer.brackets or bool(subscript.lpar))
    colon, blocked = outer.colon_at, outer.blocked
    if colon is None and subscript.lpar:  # its own parentheses are the first bracket of the header
        colon, blocked = (subscript.lpar[0], False), outer.leftmost
    if outer.header == "first" and not blocked or outer.header == "with" and colon is None:
        return Feature(what, ref, (3, 11), index, error="expected ':'", generic=False,
                       report=colon or (subscript.lbracket, False))
    if outer.header == "first" and outer.blocked_at is not None:
        return Feature(what, ref, (3, 11), index, error="expected ':'", generic=False, report=outer.blocked_at)
    if retry is not None:
        start = _left_extension(subscript, parents)
        parent = parents.get(id(start))
        if isinstance(parent, cst.IfExp) and parent.test is start:
            return Feature(what, ref, (3, 11), index, error="expected 'else' after 'if' expression",
                           generic=False, report=_inner_start(parent.body))
        value = subscript.value
        if retry.bare_name and value.value in ("print", "exec"):
            return Feature(what, ref, (3, 11), index, generic=False, report=(value, False),
                           error=f"Missing parentheses in call to '{value.value}'. Did you mean {value.value}(...)?")
    if outer.bare_disjunction:
        retry = None
    return Feature(what, ref, (3, 11), index, retry=retry)


def _enclosing_subscript(index: cst.Index, parents: dict) -> cst.Subscript | None:
    node = parents.get(id(index))
    while node is not None and not isinstance(node, cst.Subscript):
        node = parents.get(id(node))
    return node


def _left_extension(subscript: cst.CSTNode, parents: dict) -> cst.CSTNode:
    start = subscript
    parent = parents.get(id(start))
    while isinstance(parent, _LEFT_EXTENDING) and not start.lpar and _ends_with(parent, start):
        start = parent
        parent = parents.get(id(start))
    return start


def _retry(subscript: cst.Subscript | None, parents: dict, in_brackets: bool) -> Retry | None:
    if subscript is None:
        return None
    start = _left_extension(subscript, parents)
    end = subscript
    parent = parents.get(id(end))
    while not end.rpar and isinstance(parent, (*_LEFT_EXTENDING, cst.IfExp, cst.Attribute, cst.Call,
                                                 cst.Subscript)):
        end = parent
        parent = parents.get(id(end))
    value = subscript.value
    a_start = _inner_start(start) if start is not subscript else _inner_start(value)
    return Retry(a_start=a_start, value_end=(value, True), b_end=_inner_end(end),
                 bare_name=isinstance(value, cst.Name) and not value.lpar and start is subscript,
                 in_brackets=in_brackets)


def _inner_start(node) -> Anchor:
    return (node.lpar[-1], True) if getattr(node, "lpar", None) else (node, False)


def _inner_end(node) -> Anchor:
    return (node.rpar[0], False) if getattr(node, "rpar", None) else (node, True)


def _ends_with(parent: cst.CSTNode, child: cst.CSTNode) -> bool:
    if isinstance(parent, (cst.BinaryOperation, cst.BooleanOperation)):
        return parent.right is child
    if isinstance(parent, cst.Comparison):
        return parent.comparisons[-1].comparator is child
    return True  # unary operators and await end with their operand
