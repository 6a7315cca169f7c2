"""Every name the submission binds renamed to a meaningless one (`n0`, `n1`, ...), consistently
across its files: functions, classes, parameters, locals, module-level names, import aliases.

Kept as they are: attributes (a method or a field is reached through its object, and a library's
attributes are the library's), names a class body binds (they are attributes), a module-level
name of a file other than train_gpt.py that some code reads as an attribute (the file may be
loaded by path and read as `module.name`), `self` and `cls`,
dunder names, a plain `import torch` (renaming it would need `as`, which binds another object for
`import a.b`), and a name some string spells (`getattr(m, "name")`, a dict key, `__all__`): code
that reads names from strings would break. Keyword arguments are renamed where the call reaches
the submission's own function, method, class or module (whose parameters were renamed), never in
a call of a library.
"""

from __future__ import annotations

import posixpath

import libcst as cst
from libcst.metadata import (
    Assignment,
    BuiltinAssignment,
    ClassScope,
    ImportAssignment,
    ScopeProvider,
)

from audits.legality.imports import dotted
from rewrites import source

KEPT = {"self", "cls"}


def rename(files: dict[str, bytes]) -> dict[str, bytes] | None:
    mods = source.modules(files)
    if not mods:
        return None
    # parsed once, never changed
    wrapped = {rel: cst.MetadataWrapper(m, unsafe_skip_copy=True) for rel, m in mods.items()}
    siblings = {_module_name(rel): rel for rel in mods}
    info = {rel: _Bindings(w, siblings) for rel, w in wrapped.items()}
    spelled = set().union(*(i.spelled for i in info.values()))
    # a module other than the entry script may be loaded by path and read as `module.name`
    attributes = set().union(*(i.attributes for i in info.values()))
    for rel, i in info.items():
        if rel != "train_gpt.py":
            spelled |= i.top_level & attributes
    bound = sorted(set().union(*(i.names for i in info.values())) - spelled)
    taken = set().union(*(i.identifiers for i in info.values()))
    mapping, n = {}, 0
    for name in bound:
        while f"n{n}" in taken:
            n += 1
        mapping[name] = f"n{n}"
        n += 1
    top = {_module_name(rel): {x for x in i.top_level if x in mapping} for rel, i in info.items()}
    params = _Params()
    for m in mods.values():
        m.visit(params)
    new = {}
    for rel, w in wrapped.items():
        new[rel] = w.visit(_Renamer(info[rel], mapping, top, params)).code
    return source.changed(files, new)


def _module_name(rel: str) -> str:
    """The name a sibling file is imported by from the folder's root or its own directory."""
    stem = rel[:-3]
    if stem.endswith("/__init__"):
        stem = stem[:-9]
    return posixpath.basename(stem)


class _Bindings:
    """Which nodes of one module bind or read a name the rename may change."""

    def __init__(self, wrapper: cst.MetadataWrapper, siblings: dict[str, str]):
        self.siblings = siblings
        self.targets: set[int] = set()  # ids of Name nodes that bind a renamed name
        self.reads: set[int] = set()  # ids of Name nodes that read one
        self.names: set[str] = set()
        self.top_level: set[str] = set()
        self.spelled: set[str] = set()
        self.identifiers: set[str] = set()
        self.attributes: set[str] = set()  # names read as `x.name`
        self.sibling_imports: set[str] = set()  # local names bound by `import sibling`
        scopes = wrapper.resolve(ScopeProvider)
        for scope in {s for s in scopes.values() if s is not None}:
            # a class body's own names are attributes, kept; the names it reads are renamed below
            for a in () if isinstance(scope, ClassScope) else scope.assignments:
                if not self._renamable(a):
                    continue
                node = a.node
                if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
                    self.targets.add(id(node.name))
                elif isinstance(node, cst.Name):
                    self.targets.add(id(node))
                elif isinstance(node, (cst.Import, cst.ImportFrom)):
                    pass  # the renamer finds the alias by its name
                else:
                    continue
                self.names.add(a.name)
                if scope is scope.globals:
                    self.top_level.add(a.name)
            for access in scope.accesses:
                if isinstance(access.node, cst.Name) and any(self._renamable(r) for r in access.referents):
                    self.reads.add(id(access.node))
        wrapper.module.visit(_Spelled(self))

    def _renamable(self, a) -> bool:
        if isinstance(a, BuiltinAssignment) or not isinstance(a, Assignment):
            return False
        if isinstance(a.scope, ClassScope) or a.name in KEPT or a.name.startswith("__"):
            return False
        if isinstance(a, ImportAssignment) and isinstance(a.node, cst.Import):
            for alias in a.node.names:
                if alias.evaluated_alias == a.name:
                    return True
            local = {al.evaluated_name.split(".")[0] for al in a.node.names if al.asname is None}
            if a.name in local and a.name in self.siblings:
                self.sibling_imports.add(a.name)
            return False
        if isinstance(a, ImportAssignment) and isinstance(a.node, cst.ImportFrom):
            return not isinstance(a.node.names, cst.ImportStar) and dotted(a.node.module) != "__future__"
        return True


class _Spelled(cst.CSTVisitor):
    """Names some string spells, and every identifier in the module (new names avoid them)."""

    def __init__(self, b: _Bindings):
        self.b = b

    def visit_Name(self, node: cst.Name) -> None:
        self.b.identifiers.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.b.attributes.add(node.attr.value)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self._string(node.key)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("getattr", "setattr", "hasattr", "delattr") \
                and len(node.args) > 1:
            self._string(node.args[1].value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                self._string(element.slice.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in node.targets) \
                and isinstance(node.value, (cst.List, cst.Tuple)):
            for element in node.value.elements:
                self._string(element.value)

    def _string(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            if isinstance(value, str) and value.isidentifier():
                self.b.spelled.add(value)


class _Params(cst.CSTVisitor):
    """The parameters of the submission's own callables, by how a call names them."""

    def __init__(self):
        self.functions: dict[str, set[str]] = {}  # module-level function -> parameters
        self.methods: dict[str, set[str]] = {}  # method name -> parameters (of every class)
        self.inits: dict[str, set[str]] = {}  # class -> its __init__'s parameters
        self.bases: dict[str, list[str]] = {}
        self.instances: set[str] = set()  # parameters of forward / __call__ (calling a module)
        self.stack: list[cst.CSTNode] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bases[node.name.value] = [a.value.value for a in node.bases if isinstance(a.value, cst.Name)]
        self.stack.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        names = {p.name.value for p in _all_params(node.params)}
        owner = self.stack[-1] if self.stack else None
        if isinstance(owner, cst.ClassDef):
            self.methods.setdefault(node.name.value, set()).update(names)
            if node.name.value == "__init__":
                self.inits[owner.name.value] = names
            if node.name.value in ("forward", "__call__"):
                self.instances |= names
        elif owner is None:
            self.functions.setdefault(node.name.value, set()).update(names)
        self.stack.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()

    def init_of(self, cls: str, seen: frozenset = frozenset()) -> set[str]:
        if cls in self.inits:
            return self.inits[cls]
        for base in self.bases.get(cls, []):
            if base in self.bases and base not in seen:
                return self.init_of(base, seen | {cls})
        return set()


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


class _Renamer(cst.CSTTransformer):
    def __init__(self, b: _Bindings, mapping: dict[str, str], top: dict[str, set[str]], params: _Params):
        self.b, self.mapping, self.top, self.params = b, mapping, top, params
        self.classes: list[cst.ClassDef] = []
        self.skip_names: set[int] = set()  # Name nodes that are attributes or keywords

    def _new(self, name: str) -> str:
        return self.mapping.get(name, name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node)

    def leave_ClassDef(self, original, updated):
        self.classes.pop()
        return updated

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip_names.add(id(node.attr))

    def leave_Attribute(self, original, updated):
        value = original.value
        if isinstance(value, cst.Name) and value.value in self.b.sibling_imports \
                and original.attr.value in self.top.get(value.value, set()):
            return updated.with_changes(attr=cst.Name(self._new(original.attr.value)))
        return updated

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip_names.add(id(node.keyword))

    def leave_Name(self, original, updated):
        if id(original) in self.skip_names:
            return updated
        if id(original) in self.b.targets or id(original) in self.b.reads:
            return updated.with_changes(value=self._new(original.value))
        return updated

    def leave_NameItem(self, original, updated):  # global / nonlocal
        if original.name.value in self.mapping:
            return updated.with_changes(name=cst.Name(self._new(original.name.value)))
        return updated

    def leave_ImportAlias(self, original, updated):
        return updated  # handled by the statements below, which know the module

    def leave_Import(self, original, updated):
        names = []
        for alias in updated.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
                    and alias.asname.name.value in self.mapping:
                alias = alias.with_changes(asname=cst.AsName(name=cst.Name(self._new(alias.asname.name.value))))
            names.append(alias)
        return updated.with_changes(names=names)

    def leave_ImportFrom(self, original, updated):
        if isinstance(updated.names, cst.ImportStar) or dotted(updated.module) == "__future__":
            return updated
        module = (dotted(updated.module) or "").split(".")[-1] if updated.module is not None else ""
        sibling = module in self.b.siblings
        exported = self.top.get(module, set())
        names = []
        for alias in updated.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else None
            local = alias.asname.name.value if alias.asname is not None else name
            if name is None or local not in self.mapping:
                names.append(alias)
                continue
            if sibling and name in exported:
                alias = alias.with_changes(name=cst.Name(self._new(name)))
                if alias.asname is not None:
                    alias = alias.with_changes(asname=cst.AsName(name=cst.Name(self._new(local))))
            elif self._new(local) != name:
                alias = alias.with_changes(asname=cst.AsName(name=cst.Name(self._new(local))))
            names.append(alias)
        return updated.with_changes(names=names)

    def leave_Call(self, original, updated):
        accepted = self._parameters(original.func)
        if not accepted:
            return updated
        args = []
        for arg in updated.args:
            if arg.keyword is not None and arg.keyword.value in accepted and arg.keyword.value in self.mapping \
                    and arg.keyword.value not in KEPT:
                arg = arg.with_changes(keyword=cst.Name(self._new(arg.keyword.value)))
            args.append(arg)
        return updated.with_changes(args=args)

    def _parameters(self, func: cst.BaseExpression) -> set[str]:
        """The parameters of the submission's callable a call reaches, where it is one of them."""
        p = self.params
        while isinstance(func, cst.Subscript):  # kernel[grid](...), blocks[i](...)
            func = func.value
        if isinstance(func, cst.Name):
            name = func.value
            if id(func) not in self.b.reads:
                return set()  # a builtin, or a plain `import x`
            if name in p.inits or name in p.bases:
                return p.init_of(name)
            if name in p.functions:
                return p.functions[name]
            return p.instances  # a module instance held in a variable
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            root = func.value
            if isinstance(root, cst.Name) and root.value in self.b.sibling_imports:
                return p.functions.get(attr, set())
            if attr == "__init__" and isinstance(root, cst.Call) and isinstance(root.func, cst.Name) \
                    and root.func.value == "super" and self.classes:
                bases = p.bases.get(self.classes[-1].name.value, [])
                return next((p.init_of(b) for b in bases if b in p.bases), set())
            while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
                root = root.func if isinstance(root, cst.Call) else root.value
            if isinstance(root, cst.Name) and id(root) not in self.b.reads and root.value not in KEPT:
                return set()  # torch.x(...), F.x(...): a library's
            return p.methods.get(attr, set())
        return set()
