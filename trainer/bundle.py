"""Build the single standalone `train_gpt.py` a submission ships, from the trainer package.

An amalgamation with libcst: starting at trainer/main.py, every trainer module it imports (and
theirs) is included once, in dependency order. Imports between trainer modules are removed, which
works because the package imports only `from trainer.<module> import <name>` and no two modules
define the same top-level name (both are checked here). Other imports are hoisted to the top,
once each. Module docstrings become section comments; only the entry module keeps its
`if __name__ == "__main__":` block, so importing the bundle runs nothing. The result must parse
as Python 3.10. Nothing from pgolf_cli or audits is included, and this module itself is not:
no run imports it.

A record bundle (`settings` given: the run's values, trainer.config.record_settings) is the same
amalgamation with what that run never executes left out. Conditions decided by those settings
(`if cfg.ttt_enabled:`, `x if cfg.tie_embeddings else y`) and by `EXTRAS` (trainer.extras, False
here) are folded to the branch taken; then every top-level function, class, assignment and import
that nothing kept refers to is dropped, repeatedly. The settings a fold read are pinned in the file
(trainer.config.PINNED): run with another value, it stops with one line instead of running code it
does not hold. A setting added later is folded the same way, so its code ships only when it is on.
The record bundle is written minified, with short local names (trainer.localnames): the form the
cap counts, so the file counts and hashes itself as it is.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import operator
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import libcst as cst

from trainer.codesize import minify
from trainer.errors import TrainerError
from trainer.localnames import shorten_locals

PACKAGE = "trainer"
ENTRY = "main"
TARGET_PYTHON = (3, 10)


@dataclasses.dataclass
class Module:
    name: str
    tree: cst.Module
    slim: cst.Module                      # the tree with _Slim applied, statement for statement
    deps: list[str]                       # trainer modules it imports, in source order
    imports: dict[str, list[str]]         # module -> names imported from it
    optional: dict[str, list[str]]        # same, for `try: from trainer.x import ...` guards


def package_dir() -> Path:
    return Path(__file__).resolve().parent


def build_bundle(source_dir: Path | None = None, settings: Mapping[str, Any] | None = None) -> str:
    """The text of train_gpt.py built from the trainer package in `source_dir`; with `settings`,
    the record bundle for a run with those values."""
    source_dir = source_dir or package_dir()
    order = _dependency_order(source_dir)
    _check_names(order)
    fold = _Fold(settings) if settings is not None else None
    bodies = [_transform(module, module.name == ENTRY, {m.name for m in order}, fold)
              for module in order]
    imports: list[cst.Import | cst.ImportFrom] = []
    sections: list[str] = []
    for module, body in zip(order, bodies):
        imports += body.imports
        sections.append(_section(module, body.code))
    header_imports = _merge_imports(imports)
    names = ", ".join(f"{PACKAGE}/{m.name}.py" for m in order)
    text = (f'"""Parameter Golf trainer: the pgolf `{PACKAGE}` package in one file.\n\n'
            f"Built from {names}.\n"
            "Run: torchrun --standalone --nproc_per_node=8 train_gpt.py (or python train_gpt.py on "
            "one GPU).\nSettings are environment variables; the log's Hyperparameters block lists "
            'them all.\n"""\n\n'
            "from __future__ import annotations\n\n" + "\n".join(header_imports) + "\n\n"
            + "\n\n".join(sections).rstrip() + "\n")
    if fold is not None:
        tree, kept = _shake(text)
        pins = fold.pins(kept)
        if PRESET in fold.settings:  # no fold reads it (presets apply before the settings
            # exist); checked first, so a run without its preset is told that first
            pins = {PRESET: fold.settings[PRESET], **pins}
        # Written minified, with short local names: the form the cap counts and the run hashes,
        # so the file ships no minifier (trainer.codesize counts a record bundle as it is).
        text = shorten_locals(minify(_pin(tree, pins)))
    try:
        ast.parse(text, feature_version=TARGET_PYTHON)
    except SyntaxError as exc:
        raise TrainerError(f"the bundle is not Python {TARGET_PYTHON[0]}.{TARGET_PYTHON[1]} "
                         f"syntax: {exc.msg} at line {exc.lineno}") from None
    return text


def write_bundle(path: Path, source_dir: Path | None = None,
                 settings: Mapping[str, Any] | None = None) -> str:
    text = build_bundle(source_dir, settings)
    path.write_text(text, encoding="utf-8")
    return text


def pinned_settings(source: str) -> dict[str, Any] | None:
    """The settings a record bundle was built for (its PINNED literal, empty in the full bundle),
    read without running it; None for a source without one. Building with only these gives the
    same record bundle: a fold reads nothing else."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and node.target.id == "PINNED" and node.value is not None):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                return None
            scalars = (str, int, float, bool, type(None))
            ok = isinstance(value, dict) and all(
                isinstance(k, str) and isinstance(v, scalars) for k, v in value.items())
            return value if ok else None
    return None


# ---- reading the package -------------------------------------------------------------------

def _dotted(node: cst.BaseExpression | None) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _internal_import(stmt: cst.CSTNode, where: str) -> tuple[str, list[str]] | None:
    """(module, names) for `from trainer.<module> import names`; None for other statements."""
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            if _dotted(alias.name).split(".")[0] == PACKAGE:
                raise TrainerError(f"{where}: write `from {PACKAGE}.<module> import <name>`, "
                                 f"not `import {_dotted(alias.name)}`")
        return None
    if not isinstance(stmt, cst.ImportFrom):
        return None
    if stmt.relative:
        raise TrainerError(f"{where}: relative imports cannot be bundled; import from {PACKAGE}.<module>")
    module = _dotted(stmt.module)
    if module.split(".")[0] != PACKAGE:
        return None
    if module.count(".") != 1 or isinstance(stmt.names, cst.ImportStar):
        raise TrainerError(f"{where}: write `from {PACKAGE}.<module> import <name>, ...`")
    names = []
    for alias in stmt.names:
        if alias.asname is not None:
            raise TrainerError(f"{where}: `import ... as ...` of a {PACKAGE} name cannot be bundled")
        names.append(alias.name.value)
    return module.split(".")[1], names


def _guarded_import(stmt: cst.CSTNode, where: str) -> tuple[str, list[str]] | None:
    """`try: from trainer.x import ... except ...:` - a module that may not exist yet."""
    if isinstance(stmt, cst.Try) and len(stmt.body.body) == 1:
        inner = stmt.body.body[0]
        if isinstance(inner, cst.SimpleStatementLine) and len(inner.body) == 1:
            return _internal_import(inner.body[0], where)
    return None


@functools.lru_cache(maxsize=256)
def _parse(source: str) -> tuple[cst.Module, cst.Module]:
    """A module's tree and its slimmed tree. Trees are immutable, so one parse of a file's text
    serves every bundle a process builds (the audit's probe builds two or more)."""
    tree = cst.parse_module(source)
    return tree, tree.visit(_Slim())


def _read(source_dir: Path, name: str) -> Module:
    path = source_dir / f"{name}.py"
    where = f"{PACKAGE}/{name}.py"
    tree, slim = _parse(path.read_text(encoding="utf-8"))
    module = Module(name, tree, slim, [], {}, {})
    for stmt in tree.body:
        guarded = _guarded_import(stmt, where)
        if guarded is not None:
            if (source_dir / f"{guarded[0]}.py").exists():
                module.deps.append(guarded[0])
            module.optional[guarded[0]] = guarded[1]
            continue
        inner = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else []
        for small in inner:
            found = _internal_import(small, where)
            if found is not None:
                module.deps.append(found[0])
                module.imports[found[0]] = found[1]
    return module


def _dependency_order(source_dir: Path) -> list[Module]:
    modules: dict[str, Module] = {}
    order: list[Module] = []
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in visiting:
            raise TrainerError(f"import cycle: {' -> '.join(visiting + [name])}")
        if any(m.name == name for m in order):
            return
        if not (source_dir / f"{name}.py").exists():
            raise TrainerError(f"{PACKAGE}/{name}.py does not exist")
        visiting.append(name)
        modules[name] = _read(source_dir, name)
        for dep in modules[name].deps:
            visit(dep)
        visiting.pop()
        order.append(modules[name])

    visit(ENTRY)
    return order


# ---- checking names --------------------------------------------------------------------------

def _top_level_names(module: Module) -> dict[str, str]:
    """Names a module binds at top level -> what binds them ("def" or the imported origin)."""
    names: dict[str, str] = {}
    for stmt in module.tree.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names[stmt.name.value] = f"def in {module.name}"
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                names.update(_bound_by(small, module.name))
        elif isinstance(stmt, cst.Try) and _guarded_import(stmt, module.name):
            continue
        elif isinstance(stmt, (cst.Try, cst.If)):
            for name in _assigned_in_block(stmt):
                names[name] = f"def in {module.name}"
    return names


def _bound_by(small: cst.BaseSmallStatement, module: str) -> dict[str, str]:
    if isinstance(small, cst.Import):
        return {(a.asname.name.value if a.asname else _dotted(a.name).split(".")[0]):
                _dotted(a.name) for a in small.names}
    if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        source = _dotted(small.module)
        if source.split(".")[0] == PACKAGE:
            return {}
        return {(a.asname.name.value if a.asname else a.name.value): f"{source}.{a.name.value}"
                for a in small.names}
    targets: list[cst.BaseExpression] = []
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, cst.AnnAssign):
        targets = [small.target]
    out = {}
    for target in targets:
        elements = target.elements if isinstance(target, cst.Tuple) else [target]
        for el in elements:
            node = el.value if isinstance(el, cst.Element) else el
            if isinstance(node, cst.Name):
                out[node.value] = f"def in {module}"
    return out


def _assigned_in_block(stmt: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class Visitor(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                found.add(node.target.value)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            found.add(node.name.value)
            return False  # its own assignments are local

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            found.add(node.name.value)
            return False

    stmt.visit(Visitor())
    return found


def _check_names(order: list[Module]) -> None:
    bound: dict[str, tuple[str, str]] = {}  # name -> (origin, module)
    defined = {m.name: _top_level_names(m) for m in order}
    for module in order:
        for name, origin in defined[module.name].items():
            if name in bound and bound[name][0] != origin:
                raise TrainerError(f"{PACKAGE}/{module.name}.py and {PACKAGE}/{bound[name][1]}.py both "
                                 f"bind the top-level name {name!r}; rename one so they can share a file")
            bound.setdefault(name, (origin, module.name))
        present = {m: n for m, n in module.optional.items() if m in defined}
        for source, names in {**module.imports, **present}.items():
            for name in names:
                if name not in defined.get(source, {}):
                    raise TrainerError(f"{PACKAGE}/{module.name}.py imports {name} from "
                                     f"{PACKAGE}.{source}, which does not define it at top level")


# ---- writing ---------------------------------------------------------------------------------

@dataclasses.dataclass
class _Body:
    imports: list[cst.Import | cst.ImportFrom]
    code: str


def _merge_imports(imports: list[cst.Import | cst.ImportFrom]) -> list[str]:
    """One `import x` per module and one `from x import a, b` per source, standard library
    first, each group sorted."""
    plain: set[str] = set()
    names: dict[str, set[str]] = {}
    for stmt in imports:
        if isinstance(stmt, cst.Import):
            plain.update(cst.Module(body=[cst.SimpleStatementLine([cst.Import(names=[a.with_changes(
                comma=cst.MaybeSentinel.DEFAULT)])])]).code.strip() for a in stmt.names)
        else:
            source = _dotted(stmt.module)
            for a in stmt.names:
                names.setdefault(source, set()).add(
                    a.name.value + (f" as {a.asname.name.value}" if a.asname else ""))
    lines = [(p.split()[1], p) for p in plain]
    lines += [(source, f"from {source} import {', '.join(sorted(n))}") for source, n in names.items()]

    def key(item: tuple[str, str]) -> tuple[bool, bool, str]:
        root = item[0].split(".")[0]
        return root not in sys.stdlib_module_names, item[1].startswith("from"), item[0]

    ordered = sorted(lines, key=key)
    out = [line for _, line in ordered]
    first_party = next((i for i, item in enumerate(ordered) if key(item)[0]), len(out))
    return out[:first_party] + [""] * (0 < first_party < len(out)) + out[first_party:]


def _transform(module: Module, is_entry: bool, bundled: set[str], fold: _Fold | None) -> _Body:
    where = f"{PACKAGE}/{module.name}.py"
    imports: list[cst.Import | cst.ImportFrom] = []
    kept: list[cst.BaseStatement] = []
    body = list(zip(module.tree.body, module.slim.body, strict=True))
    if body and _docstring(body[0][0]) is not None:
        body = body[1:]
    for stmt, slim in body:
        guarded = _guarded_import(stmt, where)
        if guarded is not None:
            if guarded[0] not in bundled:  # absent from this build: keep the fallback assignments
                kept.extend(s for s in slim.handlers[0].body.body if not isinstance(s, cst.If))
            continue
        if _is_main_guard(stmt) and not is_entry:
            continue
        if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
            for small in stmt.body:
                if _internal_import(small, where) is not None:
                    continue
                if isinstance(small, cst.ImportFrom) and _dotted(small.module) == "__future__":
                    continue
                imports.append(small)
            continue
        kept.append(slim)
    tree = cst.Module(body=kept)
    if fold is not None:
        tree = tree.visit(fold)
    code = tree.code.strip("\n")
    return _Body(imports, code)


# Arguments that only pgolf reads from the package (`pgolf train --list-settings` shows a knob's
# reason), never a run: the bundle ships them empty.
PACKAGE_ONLY_ARGS = {"knob": 1}


# Decorators that never read the annotations of the function they wrap.
PLAIN_DECORATORS = {"torch.no_grad", "torch.inference_mode", "property", "classmethod",
                    "staticmethod", "functools.cache"}


# Decorators that only wrap what they decorate (no registry, no effect): a definition with only
# these, named by nothing kept, is dropped like an undecorated one.
PURE_DECORATORS = PLAIN_DECORATORS | {"dataclasses.dataclass"}


class _Slim(cst.CSTTransformer):
    """What a run never reads, left out of the bundle: annotations of functions that are not
    decorated or only by PLAIN_DECORATORS (with `from __future__ import annotations` they are
    unevaluated strings; decorators such as torch.library.custom_op and triton.jit read theirs,
    so those keep them) and the arguments of PACKAGE_ONLY_ARGS."""

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if any(_dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
               not in PLAIN_DECORATORS for d in original.decorators):
            return updated
        params = updated.params
        strip = lambda ps: [p.with_changes(annotation=None) for p in ps]  # noqa: E731
        star = params.star_arg
        return updated.with_changes(returns=None, params=params.with_changes(
            params=strip(params.params), kwonly_params=strip(params.kwonly_params),
            posonly_params=strip(params.posonly_params),
            star_arg=star.with_changes(annotation=None) if isinstance(star, cst.Param) else star,
            star_kwarg=params.star_kwarg and params.star_kwarg.with_changes(annotation=None)))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        index = PACKAGE_ONLY_ARGS.get(_dotted(updated.func))
        if index is None or len(updated.args) <= index:
            return updated
        args = list(updated.args)
        args[index] = args[index].with_changes(value=cst.SimpleString('""'))
        return updated.with_changes(args=args)


# ---- the record bundle -----------------------------------------------------------------------

EXTRAS = "EXTRAS"  # trainer.extras: False in a record bundle
# Calls that attach to a value what only the package and the extras read (a setting's reason and
# choices): in a record bundle, the value itself.
METADATA_ONLY = {"knob"}
PRESET = "preset"  # the setting that picks an entry of trainer.config's PRESETS

_COMPARE = {cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
            cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
            cst.GreaterThanEqual: operator.ge, cst.Is: operator.is_, cst.IsNot: operator.is_not,
            cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b}
_CONSTANTS = {"True": True, "False": False, "None": None}


class _Unknown(Exception):
    """The condition depends on more than the settings and EXTRAS."""


class _Fold(cst.CSTTransformer):
    """Folds `if`s and conditional expressions decided by `cfg.<setting>` (or `<x>.cfg.<setting>`)
    reads and EXTRAS into the branch they take, noting the settings that decided each fold under
    the top-level definition it is in."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        super().__init__()
        self.settings = dict(settings)
        self.read: dict[str | None, dict[str, Any]] = {}  # top-level name (None: no def) -> reads
        self._elifs: dict[int, cst.If] = {}  # held, so no other node can take the same id
        self._owners: list[str] = []

    def pins(self, kept: set[str]) -> dict[str, Any]:
        """The settings folds in the kept code read: a fold in dropped code pins nothing."""
        out: dict[str, Any] = {}
        for owner, read in self.read.items():
            if owner is None or owner in kept:
                out.update(read)
        return dict(sorted(out.items()))

    def visit_Module(self, node: cst.Module) -> None:
        """The module's tables: top-level names bound to a dict literal with string keys."""
        self._tables: dict[str, dict[str, cst.BaseExpression]] = {}
        for stmt in node.body:
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
            target = (small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1
                      else small.target if isinstance(small, cst.AnnAssign) else None)
            if isinstance(target, cst.Name) and isinstance(small.value, cst.Dict) and all(
                    isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                    for e in small.value.elements):
                self._tables[target.value] = {e.key.evaluated_value: e.value for e in small.value.elements}

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        """`TABLE[cfg.s]` of a table in this module is the entry the setting picks (the table,
        named nowhere else, is then dropped)."""
        table = self._tables.get(_dotted(updated.value))
        if table is None or len(updated.slice) != 1 or not isinstance(updated.slice[0].slice, cst.Index):
            return updated
        read: dict[str, Any] = {}
        try:
            key = self._value(updated.slice[0].slice.value, read)
        except _Unknown:
            return updated
        if not read or key not in table:
            return updated
        self.read.setdefault(self._owners[0] if self._owners else None, {}).update(read)
        entry = table[key]
        return entry if entry.lpar else entry.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._owners.append(node.name.value)

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self._owners.pop()
        return updated

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._owners.append(node.name.value)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self._owners.pop()
        return updated

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self._elifs[id(node.orelse)] = node.orelse

    def leave_If(self, original: cst.If, updated: cst.If):
        if self._elifs.get(id(original)) is original:  # folded with the `if` it continues
            return updated
        return self._fold_if(updated)

    def _fold_if(self, node: cst.If):
        taken = self._decide(node.test)
        if taken is None:
            return node.with_changes(orelse=self._fold_orelse(node.orelse))
        if taken:
            return cst.FlattenSentinel(_statements(node.body))
        if node.orelse is None:
            return cst.RemoveFromParent()
        if isinstance(node.orelse, cst.Else):
            return cst.FlattenSentinel(_statements(node.orelse.body))
        return self._fold_if(node.orelse)

    def _fold_orelse(self, orelse: cst.If | cst.Else | None) -> cst.If | cst.Else | None:
        """The `elif`s after an undecided test: one decided false goes, one decided true is the
        `else`."""
        if not isinstance(orelse, cst.If):
            return orelse
        taken = self._decide(orelse.test)
        if taken is None:
            return orelse.with_changes(orelse=self._fold_orelse(orelse.orelse))
        if taken:
            return cst.Else(body=orelse.body)
        return self._fold_orelse(orelse.orelse)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if _dotted(updated.func) in METADATA_ONLY and updated.args:
            return updated.args[0].value
        return updated

    def leave_IfExp(self, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression:
        taken = self._decide(updated.test)
        if taken is None:
            return updated
        branch = updated.body if taken else updated.orelse  # keeps its own parentheses: `()`
        return branch.with_changes(lpar=[*updated.lpar, *branch.lpar], rpar=[*branch.rpar, *updated.rpar])

    def leave_IndentedBlock(self, original: cst.IndentedBlock,
                            updated: cst.IndentedBlock) -> cst.IndentedBlock:
        """No empty block; nothing after a folded-in `return` (or raise, break, continue)."""
        body = list(updated.body)
        for i, stmt in enumerate(body):
            if isinstance(stmt, cst.SimpleStatementLine) and isinstance(
                    stmt.body[-1], (cst.Return, cst.Raise, cst.Break, cst.Continue)):
                body = body[:i + 1]
                break
        return updated.with_changes(body=body or [cst.SimpleStatementLine([cst.Pass()])])

    def _decide(self, test: cst.BaseExpression) -> bool | None:
        read: dict[str, Any] = {}
        try:
            taken = bool(self._value(test, read))
        except _Unknown:
            return None
        self.read.setdefault(self._owners[0] if self._owners else None, {}).update(read)
        return taken

    def _value(self, node: cst.BaseExpression, read: dict[str, Any]) -> Any:
        if isinstance(node, cst.Name):
            if node.value == EXTRAS:
                return False
            if node.value in _CONSTANTS:
                return _CONSTANTS[node.value]
        elif isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            return node.evaluated_value
        elif isinstance(node, cst.Attribute) and node.attr.value in self.settings and (
                _dotted(node.value) == "cfg" or _dotted(node.value).endswith(".cfg")):
            read[node.attr.value] = self.settings[node.attr.value]
            return read[node.attr.value]
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Not, cst.Minus)):
            value = self._value(node.expression, read)
            return not value if isinstance(node.operator, cst.Not) else -value
        elif isinstance(node, cst.BooleanOperation):
            is_and = isinstance(node.operator, cst.And)
            try:
                left = self._value(node.left, read)
            except _Unknown:
                # `x is not None and not cfg.prequant_only`: decided by the right when that
                # alone settles it and the left has no effect to keep.
                right = self._value(node.right, read)
                if bool(right) != is_and and _pure(node.left):
                    return right
                raise
            return (left and self._value(node.right, read)) if is_and else (left or self._value(node.right, read))
        elif isinstance(node, cst.Comparison):
            left = self._value(node.left, read)
            for target in node.comparisons:
                right = self._value(target.comparator, read)
                if type(target.operator) not in _COMPARE:
                    raise _Unknown
                if not _COMPARE[type(target.operator)](left, right):
                    return False
                left = right
            return True
        elif isinstance(node, (cst.Tuple, cst.List)):
            return tuple(self._value(e.value, read) for e in node.elements)
        raise _Unknown


def _pure(node: cst.CSTNode) -> bool:
    """No call, await or assignment expression inside: skipping it changes nothing."""
    found = []

    class Visitor(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, (cst.Call, cst.Await, cst.NamedExpr, cst.Yield)):
                found.append(n)
            return not found

    node.visit(Visitor())
    return not found


def _statements(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [cst.SimpleStatementLine(body=block.body)]


def _pin(tree: cst.Module, read: Mapping[str, Any]) -> str:
    """Write the settings the folds read into trainer.config's `PINNED = {}`, and keep only the
    pinned preset's entry of its `PRESETS` (a run with another preset stops at the pin). Both are
    top-level statements: only those are looked at."""
    value = cst.parse_expression(repr(dict(read)))

    def chosen(element: cst.BaseDictElement) -> bool:
        return (isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
                and element.key.evaluated_value == read.get(PRESET))

    def pinned(small: cst.BaseSmallStatement) -> cst.BaseSmallStatement:
        if not isinstance(small, cst.AnnAssign):
            return small
        if _dotted(small.target) == "PINNED":
            return small.with_changes(value=value)
        if _dotted(small.target) == "PRESETS" and PRESET in read and isinstance(small.value, cst.Dict):
            return small.with_changes(value=small.value.with_changes(
                lbrace=cst.LeftCurlyBrace(), elements=[e.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                                                       for e in small.value.elements if chosen(e)]))
        return small

    body = [stmt.with_changes(body=[pinned(s) for s in stmt.body])
            if isinstance(stmt, cst.SimpleStatementLine) else stmt for stmt in tree.body]
    return tree.with_changes(body=body).code


def _shake(text: str) -> tuple[cst.Module, set[str]]:
    """Drop the top-level functions, classes, assignments and imports nothing kept refers to;
    returns the tree and the names kept. Everything else is kept and refers to what it names:
    statements with an effect, definitions decorated by more than PURE_DECORATORS (their
    decorators run), blocks under `if`/`try`."""
    tree = cst.parse_module(text)
    # One `ast` statement per small statement of a line, one per compound statement: the same
    # statements in the same order, read from one parse of the whole text.
    statements = iter(ast.parse(text).body)
    units = []
    for stmt in tree.body:
        count = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
        nodes = [next(statements) for _ in range(count)]
        binds: set[str] | None = set()
        for node in nodes:
            names = _binds(node)
            binds = None if names is None or binds is None else binds | names
        uses = {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}
        # Definitions inside (`if triton is not None: def kernel(...)`) are kept with the unit.
        defines = {n.name for node in nodes for n in ast.walk(node)
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        units.append((binds, uses, defines))
    keep = [binds is None for binds, _, _ in units]
    needed = set().union(*(uses for (_, uses, _), kept in zip(units, keep) if kept))
    grown = True
    while grown:
        grown = False
        for i, (binds, uses, _) in enumerate(units):
            if not keep[i] and binds & needed:
                keep[i], grown = True, True
                needed |= uses
    kept_names = set().union(*((binds or set()) | defines
                               for (binds, _, defines), kept in zip(units, keep) if kept))
    return tree.with_changes(body=[s for s, kept in zip(tree.body, keep) if kept]), kept_names


def _binds(node: ast.stmt) -> set[str] | None:
    """The names a top-level statement only binds, or None when it must run (or its decorators)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        pure = all(ast.unparse(d.func if isinstance(d, ast.Call) else d) in PURE_DECORATORS
                   for d in node.decorator_list)
        return {node.name} if pure else None
    if isinstance(node, ast.Import):
        return {(a.asname or a.name.split(".")[0]) for a in node.names}
    if isinstance(node, ast.ImportFrom) and node.module != "__future__":
        return {a.asname or a.name for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if all(isinstance(n, (ast.Name, ast.Tuple, ast.Store)) for t in targets for n in ast.walk(t)):
            return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return None


def _docstring(stmt: cst.CSTNode) -> str | None:
    if (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))):
        return stmt.body[0].value.evaluated_value
    return None


def _is_main_guard(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.If) or not isinstance(stmt.test, cst.Comparison):
        return False
    return _dotted(stmt.test.left) == "__name__"


def _section(module: Module, code: str) -> str:
    doc = _docstring(module.tree.body[0]) if module.tree.body else None
    lines = [f"# {'-' * 4} {PACKAGE}/{module.name}.py {'-' * (88 - len(module.name) - 17)}"]
    for line in (doc or "").strip().splitlines():
        lines.append(f"# {line}".rstrip())
    return "\n".join(lines) + "\n\n" + code + "\n"
