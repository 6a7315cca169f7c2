"""Standard-library names newer than the target Python, resolved through imports and aliases.

The table lists what "What's New in Python 3.9" to "3.14" add that a training script might use:
modules, functions, classes, constants and typing names. Entries that were backported to 3.10
patch releases (sys.set_int_max_str_digits, tarfile.data_filter) are left out. tests/audits/pyversion/
checks every entry against a real CPython 3.10 (absent there) and this interpreter (present when
it is new enough).

Names are resolved by following the module's own imports (`import itertools as it`, `from typing
import Self as S`), not with libcst's QualifiedNameProvider, whose scope analysis costs over a
second on a 150 KB script. A use is skipped where the code guards it: under
`if sys.version_info >= (3, X)` (or the `else` of `<`), `if TYPE_CHECKING:`, `if hasattr(...)`,
in a `try:` whose handler catches ImportError, AttributeError or NameError (or anything), and in
annotations under
`from __future__ import annotations`.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from audits.pyversion.cstnodes import children

ADDED: dict[str, tuple[int, int]] = {
    # 3.9
    "zoneinfo": (3, 9), "graphlib": (3, 9), "math.lcm": (3, 9), "math.nextafter": (3, 9),
    "math.ulp": (3, 9), "random.randbytes": (3, 9), "functools.cache": (3, 9),
    "typing.Annotated": (3, 9), "asyncio.to_thread": (3, 9), "types.GenericAlias": (3, 9),
    "os.waitstatus_to_exitcode": (3, 9),
    # 3.10
    "itertools.pairwise": (3, 10), "typing.ParamSpec": (3, 10), "typing.Concatenate": (3, 10),
    "typing.TypeAlias": (3, 10), "typing.TypeGuard": (3, 10), "typing.is_typeddict": (3, 10),
    "contextlib.aclosing": (3, 10), "inspect.get_annotations": (3, 10), "dataclasses.KW_ONLY": (3, 10),
    "sys.orig_argv": (3, 10), "sys.stdlib_module_names": (3, 10), "statistics.correlation": (3, 10),
    "statistics.covariance": (3, 10), "statistics.linear_regression": (3, 10), "aiter": (3, 10),
    "anext": (3, 10), "EncodingWarning": (3, 10), "types.NoneType": (3, 10),
    "types.EllipsisType": (3, 10),
    # 3.11
    "tomllib": (3, 11), "wsgiref.types": (3, 11), "typing.Self": (3, 11),
    "typing.LiteralString": (3, 11), "typing.Never": (3, 11), "typing.assert_never": (3, 11),
    "typing.assert_type": (3, 11), "typing.reveal_type": (3, 11), "typing.TypeVarTuple": (3, 11),
    "typing.Unpack": (3, 11), "typing.Required": (3, 11), "typing.NotRequired": (3, 11),
    "typing.dataclass_transform": (3, 11), "typing.get_overloads": (3, 11),
    "typing.clear_overloads": (3, 11), "datetime.UTC": (3, 11), "enum.StrEnum": (3, 11),
    "enum.ReprEnum": (3, 11), "enum.EnumCheck": (3, 11), "enum.FlagBoundary": (3, 11),
    "enum.verify": (3, 11), "enum.member": (3, 11), "enum.nonmember": (3, 11),
    "enum.global_enum": (3, 11), "enum.show_flag_values": (3, 11), "hashlib.file_digest": (3, 11),
    "asyncio.TaskGroup": (3, 11), "asyncio.timeout": (3, 11), "asyncio.timeout_at": (3, 11),
    "asyncio.Timeout": (3, 11), "asyncio.Runner": (3, 11), "asyncio.Barrier": (3, 11),
    "asyncio.BrokenBarrierError": (3, 11), "contextlib.chdir": (3, 11), "math.cbrt": (3, 11),
    "math.exp2": (3, 11), "operator.call": (3, 11), "re.NOFLAG": (3, 11),
    "logging.getLevelNamesMapping": (3, 11), "sys.exception": (3, 11),
    "inspect.getmembers_static": (3, 11), "inspect.ismethodwrapper": (3, 11),
    "locale.getencoding": (3, 11), "string.Template.get_identifiers": (3, 11),
    "string.Template.is_valid": (3, 11), "ExceptionGroup": (3, 11), "BaseExceptionGroup": (3, 11),
    # 3.12
    "itertools.batched": (3, 12), "typing.override": (3, 12), "typing.TypeAliasType": (3, 12),
    "math.sumprod": (3, 12), "os.path.splitroot": (3, 12), "os.path.isjunction": (3, 12),
    "pathlib.Path.walk": (3, 12), "random.binomialvariate": (3, 12), "sys.monitoring": (3, 12),
    "sys.last_exc": (3, 12),
    "types.get_original_bases": (3, 12), "collections.abc.Buffer": (3, 12),
    "inspect.markcoroutinefunction": (3, 12), "logging.getHandlerByName": (3, 12),
    "logging.getHandlerNames": (3, 12), "calendar.Month": (3, 12), "calendar.Day": (3, 12),
    "asyncio.eager_task_factory": (3, 12), "asyncio.create_eager_task_factory": (3, 12),
    # 3.13
    "warnings.deprecated": (3, 13), "copy.replace": (3, 13), "os.process_cpu_count": (3, 13),
    "typing.ReadOnly": (3, 13), "typing.TypeIs": (3, 13), "typing.NoDefault": (3, 13),
    "typing.get_protocol_members": (3, 13), "typing.is_protocol": (3, 13), "math.fma": (3, 13),
    "queue.ShutDown": (3, 13), "statistics.kde": (3, 13), "base64.z85encode": (3, 13),
    "base64.z85decode": (3, 13), "glob.translate": (3, 13), "pathlib.UnsupportedOperation": (3, 13),
    "re.PatternError": (3, 13), "PythonFinalizationError": (3, 13),
    # 3.14
    "annotationlib": (3, 14), "compression": (3, 14), "string.templatelib": (3, 14),
    "concurrent.interpreters": (3, 14), "concurrent.futures.InterpreterPoolExecutor": (3, 14),
    "functools.Placeholder": (3, 14), "heapq.heapify_max": (3, 14), "heapq.heappush_max": (3, 14),
    "heapq.heappop_max": (3, 14), "math.isnormal": (3, 14), "math.issubnormal": (3, 14),
    "operator.is_none": (3, 14), "operator.is_not_none": (3, 14), "os.reload_environ": (3, 14),
    "uuid.uuid7": (3, 14), "inspect.ispackage": (3, 14), "io.Reader": (3, 14), "io.Writer": (3, 14),
}
_BUILTINS = {"aiter", "anext", "EncodingWarning", "ExceptionGroup", "BaseExceptionGroup",
             "PythonFinalizationError"}
_BINDERS = {cst.FunctionDef, cst.ClassDef, cst.Param, cst.AssignTarget, cst.For, cst.CompFor, cst.AnnAssign,
            cst.AugAssign, cst.AsName, cst.Global}
_GUARDING = {cst.If, cst.Try, cst.Annotation}
_GUARD_ERRORS = {"ImportError", "ModuleNotFoundError", "AttributeError", "NameError", "Exception",
                 "BaseException"}


@dataclasses.dataclass(frozen=True)
class Use:
    node: cst.CSTNode
    name: str  # dotted: "typing.Self", or a builtin: "ExceptionGroup"
    needs: tuple[int, int]

    def message(self, target: tuple[int, int]) -> str:
        return (f"`{self.name}` is new in Python {self.needs[0]}.{self.needs[1]}; "
                f"Python {target[0]}.{target[1]} does not have it")


def uses(module: cst.Module) -> list[Use]:
    """Every unguarded use of a table entry, at the import or attribute that names it."""
    future_annotations = any(
        isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(s, cst.ImportFrom) and _dotted(s.module) == "__future__"
            and not isinstance(s.names, cst.ImportStar) and any(a.name.value == "annotations" for a in s.names)
            for s in stmt.body)
        for stmt in module.body)
    bindings: dict[str, str] = {}  # local name -> the module it names
    bound: set[str] = set()  # every name the module binds (to tell builtins from shadows)
    found: list[Use] = []
    pending: list[tuple[cst.CSTNode, str]] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, guarded = stack.pop()
        kind = type(node)
        if kind is cst.Import:
            for alias in node.names:
                name = _dotted(alias.name)
                _check_module(node, name, guarded, found)
                local = alias.asname.name.value if alias.asname else name.split(".")[0]
                bindings[local] = name if alias.asname else local
                bound.add(local)
            continue
        if kind is cst.ImportFrom:
            if node.relative or node.module is None:
                continue
            base = _dotted(node.module)
            _check_module(node, base, guarded, found)
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    full = f"{base}.{_dotted(alias.name)}"
                    if not guarded and full in ADDED:
                        found.append(Use(alias, full, ADDED[full]))
                    local = _asname(alias) or _dotted(alias.name)
                    bound.add(local)
                    if full in ADDED or _is_module_name(full):
                        bindings.setdefault(local, full)
            continue
        if kind is cst.Attribute:
            dotted = _dotted(node)
            if dotted is not None and not guarded:
                pending.append((node, dotted))
                continue
        if kind is cst.Name:
            if not guarded:
                pending.append((node, node.value))
            continue
        if kind in _BINDERS:
            _note_bindings(node, bound)
        if kind in _GUARDING and not guarded:
            for child in children(node):
                stack.append((child, _guards(node, child, future_annotations)))
        else:
            stack.extend((child, guarded) for child in children(node))
    for node, dotted in pending:
        use = _resolve(node, dotted, bindings, bound)
        if use is not None:
            found.append(use)
    return found


def _check_module(node, name: str, guarded: bool, found: list[Use]) -> None:
    if guarded:
        return
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix in ADDED:
            found.append(Use(node, prefix, ADDED[prefix]))
            return


def _is_module_name(name: str) -> bool:
    return name in ("os.path", "collections.abc", "concurrent.futures")


def _resolve(node, dotted: str, bindings: dict[str, str], bound: set[str]) -> Use | None:
    root, _, rest = dotted.partition(".")
    if root in bindings:
        full = bindings[root] + ("." + rest if rest else "")
        parts = full.split(".")
        start = len(bindings[root].split("."))
        for i in range(start + 1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in ADDED:
                return Use(node, prefix, ADDED[prefix])
        return None
    if not rest and dotted in _BUILTINS and dotted not in bound:
        return Use(node, dotted, ADDED[dotted])
    return None


def _dotted(node) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = _dotted(node.value)
        return None if left is None else f"{left}.{node.attr.value}"
    return None


def _asname(alias) -> str | None:
    return alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None


def _note_bindings(node, bound: set[str]) -> None:
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        bound.add(node.name.value)
    elif isinstance(node, cst.Param):
        bound.add(node.name.value)
    elif isinstance(node, (cst.AssignTarget, cst.For, cst.CompFor, cst.AnnAssign, cst.AugAssign)):
        target = node.target
        for name in _target_names(target):
            bound.add(name)
    elif isinstance(node, cst.AsName) and isinstance(node.name, cst.Name):
        bound.add(node.name.value)
    elif isinstance(node, cst.Global):
        bound.update(n.name.value for n in node.names)


def _target_names(target) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        names = []
        for element in target.elements:
            names.extend(_target_names(element.value))
        return names
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _guards(node, child, future_annotations: bool) -> bool:
    """Whether `child` of `node` only runs where the newer name exists (or never runs)."""
    if isinstance(node, cst.If):
        if child is node.body:
            return _test_guards(node.test, negated=False)
        if child is node.orelse:
            return _test_guards(node.test, negated=True)
        return False
    if isinstance(node, cst.Try) and child is node.body:
        return any(_catches(handler) for handler in node.handlers)
    if isinstance(node, cst.Annotation):
        return future_annotations
    return False


def _test_guards(test, negated: bool) -> bool:
    """`sys.version_info >= (3, X)` / `TYPE_CHECKING` / `hasattr(...)`; with `negated`, the
    `else` of `sys.version_info < (3, X)`."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, op = test.comparisons[0].comparator, test.comparisons[0].operator
        subject = _dotted(test.left.value if isinstance(test.left, cst.Subscript) else test.left)
        if subject in ("sys.version_info", "version_info") or _dotted(
                left.value if isinstance(left, cst.Subscript) else left) in ("sys.version_info", "version_info"):
            version_first = subject in ("sys.version_info", "version_info")
            newer_when_true = isinstance(op, (cst.GreaterThanEqual, cst.GreaterThan)) if version_first \
                else isinstance(op, (cst.LessThanEqual, cst.LessThan))
            return newer_when_true != negated
        return False
    if negated:
        return False
    if _dotted(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
        return True
    return isinstance(test, cst.Call) and _dotted(test.func) == "hasattr"


def _catches(handler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    for kind in kinds:
        value = kind.value if isinstance(kind, cst.Element) else kind
        name = _dotted(value)
        if name is not None and name.split(".")[-1] in _GUARD_ERRORS:
            return True
    return False
