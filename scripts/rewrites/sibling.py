"""The entry script's functions and classes moved into a shipped sibling module and imported back
(`from helpers import f, g`), as submissions split their evaluation into a helper file.

Moved: every top-level function and class that needs from the script nothing but its imports,
immutable settings (`X = int(os.environ.get("X", "1"))`, copied beside it) and other moved ones. One
that reads another module-level name, declares a global, or looks at its own module (`__file__`,
`globals()`) stays, so the program is the same.
"""

from __future__ import annotations

import builtins
import posixpath

import libcst as cst
from libcst.metadata import ScopeProvider

from audits.legality import syntax
from rewrites import source

_SIMPLE_CALLS = {"int", "float", "bool", "str", "tuple", "list", "dict", "set", "len", "range", "min", "max",
                 "abs", "round", "get", "getenv", "split", "lower", "strip", "upper", "join", "path", "exists"}
_SELF_AWARE = {"__file__", "__name__", "globals", "locals", "inspect", "sys"}


def move_functions(files: dict[str, bytes]) -> dict[str, bytes] | None:
    mods = source.modules(files)
    if not mods:
        return None
    entry = "train_gpt.py" if "train_gpt.py" in mods else max(mods, key=lambda rel: len(files[rel]))
    module = mods[entry]
    body = list(module.body)
    imports = [s for s in body if _is_import(s)]
    units = {_unit_name(s): s for s in body if _unit_name(s)}
    constants = {}
    blockers = set()
    counts: dict[str, int] = {}
    for stmt in body:
        for name in _bound(stmt):
            counts[name] = counts.get(name, 0) + 1
    for stmt in body:
        if _is_import(stmt) or _unit_name(stmt):
            continue
        name = _simple_setting(stmt)
        if name and counts.get(name) == 1:
            constants[name] = stmt
        else:
            blockers |= _bound(stmt)
    imported = set().union(*(_bound(s) for s in imports)) if imports else set()
    globals_written = set().union(*(_declared_global(s) for s in body))
    reads = _module_reads(module)
    free = {name: _free(stmt, reads) for name, stmt in units.items()}
    const_free = {name: _free(stmt, reads) for name, stmt in constants.items()}
    movable = {n for n in units if counts[n] == 1 and n not in globals_written and not _declared_global(units[n])
               and not _free(units[n], None) & _SELF_AWARE}
    okay_constants = {n for n in constants if n not in globals_written
                      and const_free[n] <= imported | set(constants) | _BUILTIN}
    changed = True
    while changed:
        changed = False
        for n in sorted(movable):
            module_names = free[n] & (set(units) | set(constants) | blockers)
            if any(m not in movable and m not in okay_constants for m in module_names):
                movable.discard(n)
                changed = True
        for n in sorted(okay_constants):
            if const_free[n] & (set(constants) - okay_constants):
                okay_constants.discard(n)
                changed = True
    if not movable:
        return None
    needed = set()
    todo = [m for n in movable for m in free[n] & okay_constants]
    while todo:
        c = todo.pop()
        if c not in needed:
            needed.add(c)
            todo += list(const_free[c] & okay_constants)
    directory = posixpath.dirname(entry)
    name = "helpers"
    while posixpath.join(directory, name + ".py") in files:
        name += "_"
    helper_body = [s for s in body if _is_import(s) or _unit_name(s) in movable
                   or any(n in needed for n in _bound(s)) and _simple_setting(s) in needed]
    importer = cst.SimpleStatementLine([cst.ImportFrom(
        module=cst.Name(name), names=[cst.ImportAlias(cst.Name(n)) for n in sorted(movable)])])
    kept, placed = [], False
    for s in body:
        if _unit_name(s) in movable:
            if not placed:
                kept.append(importer)
                placed = True
            continue
        kept.append(s)
    future = [s for s in helper_body if _is_future(s)]
    helper = module.with_changes(body=future + [s for s in helper_body if not _is_future(s)], header=[])
    return source.changed(files, {entry: module.with_changes(body=kept).code,
                                  posixpath.join(directory, name + ".py"): helper.code})


_BUILTIN = set(dir(builtins))


def _is_import(stmt) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine)
            and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body))


def _is_future(stmt) -> bool:
    return _is_import(stmt) and any(isinstance(s, cst.ImportFrom) and isinstance(s.module, cst.Name)
                                    and s.module.value == "__future__" for s in stmt.body)


def _unit_name(stmt) -> str | None:
    return stmt.name.value if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else None


def _simple_setting(stmt) -> str | None:
    """`NAME = <literal, or settings read from the environment>`: the name, where it is one."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    s = stmt.body[0]
    if isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name):
        value = s.value
    elif isinstance(s, cst.AnnAssign) and isinstance(s.target, cst.Name) and s.value is not None:
        value = s.value
    else:
        return None
    calls = _Calls()
    value.visit(calls)
    if calls.other:
        return None
    return (s.targets[0].target if isinstance(s, cst.Assign) else s.target).value


class _Calls(cst.CSTVisitor):
    def __init__(self):
        self.other = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = (func.value if isinstance(func, cst.Name)
                else func.attr.value if isinstance(func, cst.Attribute) else None)
        if name not in _SIMPLE_CALLS:
            self.other = True

    def visit_Lambda(self, node) -> None:
        self.other = True

    def visit_List(self, node) -> None:  # a mutable value: each module would hold its own
        self.other = True

    visit_Dict = visit_Set = visit_ListComp = visit_DictComp = visit_SetComp = visit_List


def _bound(stmt) -> set[str]:
    """Names a module-level statement binds."""
    found = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            found.add(node.name.value)
            return False

        def visit_ClassDef(self, node):
            found.add(node.name.value)
            return False

        def visit_AssignTarget(self, node):
            found.update(syntax.names(node.target))

        def visit_AnnAssign(self, node):
            found.update(syntax.names(node.target))

        def visit_AugAssign(self, node):
            found.update(syntax.names(node.target))

        def visit_For(self, node):
            found.update(syntax.names(node.target))

        def visit_WithItem(self, node):
            if node.asname is not None:
                found.update(syntax.names(node.asname.name))

        def visit_NamedExpr(self, node):
            found.update(syntax.names(node.target))

        def visit_ImportAlias(self, node):
            if node.asname is not None:
                found.update(syntax.names(node.asname.name))
            else:
                n = node.name
                while isinstance(n, cst.Attribute):
                    n = n.value
                found.add(n.value)

        def visit_ExceptHandler(self, node):
            if node.name is not None:
                found.update(syntax.names(node.name.name))

    stmt.visit(V())
    return found


def _declared_global(stmt) -> set[str]:
    found = set()

    class V(cst.CSTVisitor):
        def visit_Global(self, node):
            found.update(n.name.value for n in node.names)

    stmt.visit(V())
    return found


def _module_reads(module: cst.Module) -> set[int]:
    """Ids of the Name nodes that read a module-level binding, from any scope."""
    scopes = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    found = set()
    for scope in {s for s in scopes.values() if s is not None}:
        for access in scope.accesses:
            if any(getattr(r, "scope", None) is scope.globals for r in access.referents):
                found.add(id(access.node))
    return found


def _free(stmt, reads: set[int] | None) -> set[str]:
    """The module-level names the statement reads (every name it reads, when `reads` is None)."""
    found = set()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node):
            node.value.visit(self)
            return False

        def visit_Arg(self, node):
            node.value.visit(self)
            return False

        def visit_Name(self, node):
            if reads is None or id(node) in reads:
                found.add(node.value)

    stmt.visit(V())
    return found
