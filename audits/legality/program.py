"""The table of a submission's code: every function, method and class of the shipped scripts, and
the import aliases, gathered by one walk over statements (expressions are left to the interpreter).

Calls are resolved by name, the way a reader follows them: `f(...)` to the def `f` visible from the
call (nested, then module level, then a shipped script it was imported from, by either import
form or a package's `__init__`), `obj.m(...)` to every
method named `m` (to the scripts' module-level `m` when `obj` is a module loaded at run time),
`Cls(...)` to `Cls.__init__`. Over-approximating a call target costs precision, never a missed
path.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import libcst as cst

from audits.legality import apis, imports
from audits.legality.parse import ParsedScript

MODULE_BASES = {"torch.nn.Module", "nn.Module", "Module"}
OPTIMIZER_BASES = {"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer", "optim.Optimizer",
                   "Optimizer"}


@dataclasses.dataclass(eq=False)
class Function:
    key: str
    name: str
    script: ParsedScript
    node: cst.FunctionDef | None  # None for a script's module body
    body: tuple[cst.CSTNode, ...]
    params: tuple[str, ...] = ()
    cls: ClassInfo | None = None
    parent: Function | None = None
    nested: dict[str, Function] = dataclasses.field(default_factory=dict)

    @property
    def is_module_method(self) -> bool:
        return self.cls is not None and self.cls.is_module


@dataclasses.dataclass(eq=False)
class ClassInfo:
    name: str
    script: ParsedScript
    node: cst.ClassDef
    bases: tuple[str, ...]
    methods: dict[str, Function] = dataclasses.field(default_factory=dict)
    is_module: bool = False
    is_optimizer: bool = False

    @functools.cached_property
    def settings(self) -> frozenset[str]:
        """The names the class body binds (`train_files = os.path.join(...)`): its declared
        attributes (read once; every attribute store on an object of the class asks)."""
        names = set()
        for s in _block(self.node.body):
            if not isinstance(s, cst.SimpleStatementLine):
                continue
            for small in s.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
                    [small.target] if isinstance(small, cst.AnnAssign) else []
                names |= {t.value for t in targets if isinstance(t, cst.Name)}
        return frozenset(names)

    @property
    def fields(self) -> tuple[str, ...]:
        """The annotated class-level names, in order: the constructor's parameters of a dataclass
        or NamedTuple."""
        return tuple(s.body[0].target.value for s in _block(self.node.body)
                     if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.AnnAssign)
                     and isinstance(s.body[0].target, cst.Name))


@dataclasses.dataclass
class Program:
    scripts: dict[str, ParsedScript]
    aliases: dict[str, dict[str, str]]  # per script: local name -> dotted import
    roots: dict[str, Function]  # per script: its module body
    functions: dict[str, dict[str, Function]]  # per script: module-level defs
    classes: dict[str, ClassInfo]
    methods: dict[str, list[Function]]  # every method, by name
    all_functions: list[Function]
    by_key: dict[str, Function] = dataclasses.field(default_factory=dict)
    # per script: module-level names bound to a literal (`_B = True`, as minifiers hoist them)
    constants: dict[str, dict[str, cst.BaseExpression]] = dataclasses.field(default_factory=dict)
    # attribute names registered as buffers a module's state dict keeps (not `persistent=False`)
    buffers: frozenset[str] = frozenset()
    resolved: dict[str, Function | ClassInfo | None] = dataclasses.field(default_factory=dict)

    def literal(self, script: str, node: cst.BaseExpression) -> cst.BaseExpression:
        """`node`, or the literal a module-level name stands for."""
        if isinstance(node, cst.Name) and node.value not in ("True", "False", "None"):
            return self.constants[script].get(node.value, node)
        return node

    def qualified(self, script: str, node: cst.BaseExpression) -> str | None:
        return imports.qualified(node, self.aliases[script])

    def sibling(self, script: str, name: str) -> str | None:
        """The script a name was imported from, when that script ships in the folder."""
        target = self.aliases[script].get(name)
        if not target:
            return None
        return self.module_script(target) or self.module_script(target.rsplit(".", 1)[0])

    def module_script(self, module: str) -> str | None:
        """The shipped script a dotted module name loads: `a/b.py` or the package's
        `a/b/__init__.py`, else the one script of that file name in a subfolder (a folder put on
        the import path)."""
        stem = module.replace(".", "/")
        for rel in (stem + ".py", stem + "/__init__.py"):
            if rel in self.scripts:
                return rel
        found = [rel for rel in self.scripts if rel.endswith("/" + stem + ".py")]
        return found[0] if len(found) == 1 else None

    def resolve(self, dotted: str, depth: int = 0) -> Function | ClassInfo | None:
        """The def or class of a shipped script that an imported dotted name stands for
        (`helpers.score`, `pkg.mod.Cls`, a name a package's `__init__` imports in turn), or None
        for a library's."""
        if dotted not in self.resolved:
            self.resolved[dotted] = self._resolve(dotted, depth)
        return self.resolved[dotted]

    def _resolve(self, dotted: str, depth: int) -> Function | ClassInfo | None:
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            rel = self.module_script(".".join(parts[:cut]))
            if rel is None:
                continue
            name, rest = parts[cut], parts[cut + 1:]
            found = self.functions[rel].get(name) or self.classes.get(f"{rel}:{name}")
            if isinstance(found, ClassInfo) and len(rest) == 1:
                return found.methods.get(rest[0])
            if found is not None:
                return found if not rest else None
            again = self.aliases[rel].get(name)  # re-exported: `from .mod import f` in __init__
            if again is not None and depth < 4:
                return self.resolve(".".join([again, *rest]), depth + 1)
            return None
        return None

    def lookup(self, fn: Function, name: str) -> Function | ClassInfo | None:
        """The def or class `name` refers to inside `fn`."""
        scope = fn
        while scope is not None:
            if name in scope.nested:
                return scope.nested[name]
            scope = scope.parent
        rel = fn.script.rel
        found = self.functions[rel].get(name) or self.classes.get(f"{rel}:{name}")
        if found is not None:
            return found
        target = self.aliases[rel].get(name)
        return self.resolve(target) if target else None


def build(scripts: dict[str, ParsedScript]) -> Program:
    program = Program(scripts, {}, {}, {}, {}, {}, [])
    for rel, parsed in scripts.items():
        table: dict[str, str] = {}
        program.aliases[rel] = table
        program.functions[rel] = {}
        root = Function(f"{rel}:<module>", "<module>", parsed, None, tuple(parsed.module.body))
        program.roots[rel] = root
        program.by_key[root.key] = root
        program.constants[rel] = _constants(parsed.module)
        for stmt in parsed.module.body:
            _collect(program, parsed, stmt, root, None, table)
    _classify_classes(program)
    program.buffers = frozenset(name for parsed in scripts.values() for name in _buffers(parsed.source))
    return program


_BUFFER = re.compile(r"\bregister_buffer\(\s*(['\"])(\w+)\1")
_CALL_LIMIT = 2_000  # characters of one call's arguments read for `persistent=False`


def _package(rel: str) -> str:
    """The dotted package a script's relative imports start from."""
    return rel.rsplit("/", 1)[0].replace("/", ".") if "/" in rel else ""


def _buffers(source: str) -> set[str]:
    """The names of `self.register_buffer("name", ...)` calls, unless the call, to its closing
    bracket, says `persistent=False`."""
    names = set()
    for m in _BUFFER.finditer(source):
        depth, end = 1, m.end()
        while depth and end < min(len(source), m.end() + _CALL_LIMIT):
            depth += {"(": 1, ")": -1}.get(source[end], 0)
            end += 1
        if not re.search(r"persistent\s*=\s*False", source[m.end():end]):
            names.add(m.group(2))
    return names


def _collect(program: Program, parsed: ParsedScript, stmt: cst.CSTNode,
             owner: Function, cls: ClassInfo | None, table: dict[str, str]) -> None:
    """Record defs, classes and imports in `stmt`, descending through compound statements."""
    if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        for small in stmt.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                imports.add(small, table, _package(parsed.rel))
            elif owner.node is None and cls is None and isinstance(small, cst.Assign):
                imports.add_alias(small, table, apis.interpreted)
        return
    if isinstance(stmt, cst.FunctionDef):
        fn = _function(program, parsed, stmt, owner, cls)
        if cls is not None:
            cls.methods.setdefault(fn.name, fn)
            program.methods.setdefault(fn.name, []).append(fn)
        elif owner.node is None:
            program.functions[parsed.rel].setdefault(fn.name, fn)
        else:
            owner.nested.setdefault(fn.name, fn)
        for inner in _block(stmt.body):
            _collect(program, parsed, inner, fn, None, table)
        return
    if isinstance(stmt, cst.ClassDef):
        if owner.node is not None:
            return  # classes defined inside functions are rare in training scripts; not followed
        bases = tuple(b for b in (imports.dotted(arg.value) for arg in stmt.bases) if b)
        info = ClassInfo(stmt.name.value, parsed, stmt, bases)
        program.classes.setdefault(f"{parsed.rel}:{info.name}", info)
        for inner in _block(stmt.body):
            _collect(program, parsed, inner, owner, info, table)
        return
    for block in compound_blocks(stmt):
        for inner in block:
            _collect(program, parsed, inner, owner, cls, table)


def _function(program: Program, parsed: ParsedScript, node: cst.FunctionDef,
              owner: Function, cls: ClassInfo | None) -> Function:
    name = node.name.value
    prefix = parsed.rel + ":" + (f"{cls.name}." if cls else "")
    if owner.node is not None:
        prefix = owner.key + ".<locals>."
    params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
    if isinstance(node.params.star_arg, cst.Param):
        params.append(node.params.star_arg.name.value)
    params += [p.name.value for p in node.params.kwonly_params]
    if node.params.star_kwarg is not None:
        params.append(node.params.star_kwarg.name.value)
    fn = Function(prefix + name, name, parsed, node, tuple(_block(node.body)), tuple(params),
                  cls, owner if owner.node is not None else None)
    program.all_functions.append(fn)
    program.by_key.setdefault(fn.key, fn)
    return fn


def _block(body: cst.BaseSuite) -> list[cst.CSTNode]:
    """The statements of a suite; a one-line suite (`if x: y()`) is kept whole, and is read like
    a simple statement line."""
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    return [body]


def compound_blocks(stmt: cst.CSTNode) -> list[list[cst.CSTNode]]:
    """The statement lists inside a compound statement, in source order (If/elif/else, loop body
    and else, with body, try/except/else/finally)."""
    blocks = []
    if isinstance(stmt, cst.If):
        blocks.append(_block(stmt.body))
        orelse = stmt.orelse
        if isinstance(orelse, cst.If):
            blocks.append([orelse])
        elif isinstance(orelse, cst.Else):
            blocks.append(_block(orelse.body))
    elif isinstance(stmt, (cst.For, cst.While)):
        blocks.append(_block(stmt.body))
        if stmt.orelse is not None:
            blocks.append(_block(stmt.orelse.body))
    elif isinstance(stmt, cst.With):
        blocks.append(_block(stmt.body))
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        blocks.append(_block(stmt.body))
        blocks += [_block(h.body) for h in stmt.handlers]
        if stmt.orelse is not None:
            blocks.append(_block(stmt.orelse.body))
        if stmt.finalbody is not None:
            blocks.append(_block(stmt.finalbody.body))
    elif isinstance(stmt, cst.Match):
        blocks += [_block(case.body) for case in stmt.cases]
    return blocks


_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.Name)


def _constants(module: cst.Module) -> dict[str, cst.BaseExpression]:
    found = {}
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and isinstance(small.value, _LITERALS) \
                        and (not isinstance(small.value, cst.Name) or small.value.value in ("True", "False", "None")):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            found[target.target.value] = small.value
    return found


def _classify_classes(program: Program) -> None:
    """Mark nn.Module and optimizer subclasses, following local base classes."""
    by_name = {info.name: info for info in program.classes.values()}

    def reaches(info: ClassInfo, wanted: set[str], seen: set[str]) -> bool:
        for base in info.bases:
            if base in wanted or base.rsplit(".", 1)[-1] in {w.rsplit(".", 1)[-1] for w in wanted}:
                return True
            local = by_name.get(base)
            if local is not None and local.name not in seen:
                seen.add(local.name)
                if reaches(local, wanted, seen):
                    return True
        return False

    for info in program.classes.values():
        info.is_module = reaches(info, MODULE_BASES, {info.name})
        info.is_optimizer = reaches(info, OPTIMIZER_BASES, {info.name})
