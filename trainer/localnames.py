"""Shorter local names, for the record bundle (trainer.bundle): the same program in fewer
compressed bytes (about 1,200 on the record stack).

Works on tokens, as trainer.codesize's minifier does, so the text is otherwise unchanged: in each
function or method defined at the top level (or in a top-level `if`/`try`), a name its own body
assigns (`x = ...`, `for x in`, `with ... as x`) is renamed to the shortest name the function
does not use, at every place the name occurs in the function's lines except attributes (`.x`).
Parameters are renamed only in a top-level function that the file names in calls alone (never
passes it on: a callback may be called by keyword, as torch calls `setup_context`) and that no
call anywhere passes the parameter by keyword. A name is left alone where renaming could change
what runs: a parameter of a nested function or lambda, a keyword argument, a name declared
`global`/`nonlocal`, read inside an f-string (copied verbatim), or bound by `except ... as`,
`import`, a nested `def`; a function that calls `locals`, `vars`, `globals`, `eval` or `exec`,
or holds a class, is left as it is.
"""

from __future__ import annotations

import ast
import builtins
import io
import itertools
import keyword
import string
import token
import tokenize

_DYNAMIC = {"locals", "vars", "eval", "exec", "globals"}


def shorten_locals(source: str) -> str:
    """`source` with the local names of its functions shortened; the same program."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    keywords = {n.arg for n in ast.walk(tree) if isinstance(n, ast.keyword)}
    loads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    passed = {n.id for n in loads if id(n) not in called}  # named other than in a call: a callback
    renames: list[tuple[int, int, dict[str, str]]] = []  # first line, last line, old -> new
    for node in _definitions(tree.body):
        members = node.body if isinstance(node, ast.ClassDef) else [node]
        for fn in members:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _jitted(fn):
                # Parameters too where only this file calls the function, and positionally
                # (a callback may be called with keywords: torch's setup_context is).
                own_calls = fn is node and not fn.decorator_list and fn.name not in passed
                mapping = _mapping(fn, keywords if own_calls else None)
                if mapping:
                    renames.append((fn.lineno, fn.end_lineno, mapping))
    if not renames:
        return source
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    edits: dict[tuple[int, int], tuple[int, str]] = {}  # (row, col) -> (old length, new text)
    spans = iter(renames)
    span = next(spans)
    prev = None
    for tok in tokens:
        while span is not None and tok.start[0] > span[1]:
            span = next(spans, None)
        if (span is not None and tok.type == token.NAME and span[0] <= tok.start[0]
                and tok.string in span[2] and not (prev is not None and prev.string == ".")):
            edits[tok.start] = (len(tok.string), span[2][tok.string])
        if tok.type not in (token.NL, token.COMMENT):
            prev = tok
    by_row: dict[int, list[tuple[int, int, str]]] = {}
    for (row, col), (length, new) in edits.items():
        by_row.setdefault(row, []).append((col, length, new))
    out = []
    for row, line in enumerate(lines, 1):
        for col, length, new in sorted(by_row.get(row, ()), reverse=True):  # right to left
            line = line[:col] + new + line[col + length:]
        out.append(line)
    return "".join(out)


def _jitted(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated by a JIT compiler (`@triton.jit`, `@triton.autotune(...)`): it re-reads the
    function's source, so the kernel shipped stays the one that ran on GPUs, names and all."""
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == "triton":
            return True
    return False


def _definitions(body: list[ast.stmt]):
    """The top-level statements, those in top-level `if`/`try` blocks in their place (`if triton
    is not None:` defines the kernels)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _definitions(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            for part in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _definitions(part)
        else:
            yield node


def _mapping(fn: ast.FunctionDef | ast.AsyncFunctionDef, keywords: set[str] | None) -> dict[str, str]:
    """Old -> new names in `fn`; its parameters too when `keywords` (every keyword argument
    name of the file) is given and does not hold them."""
    nodes = list(ast.walk(fn))
    if any(isinstance(n, ast.ClassDef) for n in nodes) or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _DYNAMIC
            for n in nodes):
        return {}
    used = {n.id for n in nodes if isinstance(n, ast.Name)}
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                              fn.args.vararg, fn.args.kwarg) if a is not None}
    renamable = params - keywords if keywords is not None else set()
    fixed = {n.arg for n in nodes if isinstance(n, (ast.arg, ast.keyword)) and n.arg} - renamable
    fixed |= {n.arg for m in nodes if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                     ast.Lambda)) and m is not fn
              for n in ast.walk(m.args) if isinstance(n, ast.arg)}
    fixed |= {n.arg for n in nodes if isinstance(n, ast.keyword) and n.arg}
    fixed |= {name for n in nodes if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    fixed |= {n.name for n in nodes if isinstance(n, (ast.ExceptHandler, ast.FunctionDef,
                                                       ast.AsyncFunctionDef)) and n.name}
    fixed |= {(a.asname or a.name).split(".")[0] for n in nodes
              if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    fixed |= {m.id for n in nodes if isinstance(n, ast.JoinedStr)
              for m in ast.walk(n) if isinstance(m, ast.Name)}
    own = [n.id for n in _own_scope(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    own += [n.id for n in _own_scope(fn) if isinstance(n, ast.Name) and n.id in renamable]
    names = sorted({n for n in own if n not in fixed and not n.startswith("__")},
                   key=lambda n: (-own.count(n), n))
    taken = used | fixed | params
    fresh = (n for n in _short_names() if n not in taken)
    mapping = {}
    for name in names:
        new = next(fresh)
        if len(new) < len(name):
            mapping[name] = new
    return mapping


def _own_scope(fn: ast.AST):
    """The nodes of `fn`'s body, not those of the functions and lambdas nested in it."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _short_names():
    first = string.ascii_letters
    for length in itertools.count(1):
        for chars in itertools.product(first, *[first + string.digits + "_"] * (length - 1)):
            name = "".join(chars)
            if not keyword.iskeyword(name) and not keyword.issoftkeyword(name) \
                    and not hasattr(builtins, name):
                yield name
