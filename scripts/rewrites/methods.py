"""Every top-level function of every module turned into the method of an object, as submissions
hold their evaluation in a class: `def f(x)` becomes `class _F_f: def f(self_, x)` followed by
`_f = _F_f()`, at the same place, and every read of `f` becomes `_f.f`.

Left as they are: a function bound more than once at module level or declared global somewhere,
one that another module of the folder may name (imported by name, or any attribute of that
name), and one whose code holds a `__name` that a class body would mangle.
"""

from __future__ import annotations

import re

import libcst as cst
from libcst.metadata import ScopeProvider

from rewrites import source

_MANGLED = re.compile(r"\b__\w*[^_\W]_?\b")


def to_methods(files: dict[str, bytes]) -> dict[str, bytes] | None:
    mods = source.modules(files)
    new = {}
    for rel, module in mods.items():
        named = set().union(*(_named(m) for other, m in mods.items() if other != rel))
        out = _rewrite(module, named)
        if out is not None:
            new[rel] = out
    return source.changed(files, new) if new else None


def _rewrite(module: cst.Module, named: set[str]) -> str | None:
    top = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider).get(module)
    if top is None:
        return None
    taken = {n.value for n in _names(module)}
    chosen: dict[str, tuple[str, str]] = {}  # function -> (class name, object name)
    reads: dict[int, str] = {}  # id of a Name that reads a chosen function -> its object name
    for stmt in module.body:
        if not isinstance(stmt, cst.FunctionDef):
            continue
        name = stmt.name.value
        assignments = top.assignments[name]
        if len(assignments) != 1 or name in named or _declared_global(module, name) \
                or _MANGLED.search(module.code_for_node(stmt)):
            continue
        cls, obj = _fresh(f"_F_{name}", taken), _fresh(f"_{name}_", taken)
        chosen[name] = (cls, obj)
        for access in next(iter(assignments)).references:
            if isinstance(access.node, cst.Name):
                reads[id(access.node)] = obj
    if not chosen:
        return None
    return module.visit(_Methods(chosen, reads)).code


class _Methods(cst.CSTTransformer):
    def __init__(self, chosen: dict[str, tuple[str, str]], reads: dict[int, str]):
        self.chosen, self.reads = chosen, reads

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        obj = self.reads.get(id(original))
        return cst.Attribute(value=cst.Name(obj), attr=updated) if obj else updated

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        body = []
        for stmt in updated.body:
            name = stmt.name.value if isinstance(stmt, cst.FunctionDef) else None
            if name not in self.chosen:
                body.append(stmt)
                continue
            cls, obj = self.chosen[name]
            own = _fresh("self_", {n.value for n in _names(stmt)})
            params = stmt.params.with_changes(params=[cst.Param(cst.Name(own)), *stmt.params.params]) \
                if not stmt.params.posonly_params else \
                stmt.params.with_changes(posonly_params=[cst.Param(cst.Name(own)), *stmt.params.posonly_params])
            method = stmt.with_changes(params=params, leading_lines=[])
            body.append(cst.ClassDef(name=cst.Name(cls), body=cst.IndentedBlock([method]),
                                     leading_lines=stmt.leading_lines))
            body.append(cst.SimpleStatementLine([cst.Assign(
                targets=[cst.AssignTarget(cst.Name(obj))], value=cst.Call(func=cst.Name(cls)))]))
        return updated.with_changes(body=body)


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(V())
    return found


def _named(module: cst.Module) -> set[str]:
    """Names the module imports from others, and every attribute name it reads."""
    found = set()

    class V(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if not isinstance(node.names, cst.ImportStar):
                found.update(a.name.value for a in node.names if isinstance(a.name, cst.Name))

        def visit_Attribute(self, node: cst.Attribute) -> None:
            found.add(node.attr.value)

    module.visit(V())
    return found


def _declared_global(module: cst.Module, name: str) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_Global(self, node: cst.Global) -> None:
            found.extend(n.name.value for n in node.names if n.name.value == name)

    module.visit(V())
    return bool(found)


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name
