"""Each legality rule owns its logic: the analysis core (audits/legality) reports neutral events
and names no rule, each rule's module turns events into its verdicts, and every reading a rule
module can give has its words (read from the source, so a missing one fails here, not mid-audit)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from audits import catalogue
from audits.legality.judge import RECOGNIZERS
from audits.registry import CHECKS, WORDS

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "audits" / "legality"
RULE_MODULES = sorted(p for p in (ROOT / "audits" / "rules" / "legality").glob("*.py")
                      if "RULES = rules(" in p.read_text(encoding="utf-8"))


def test_the_analysis_core_names_no_rule():
    for path in sorted(CORE.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        named = [r.id for r in catalogue.RULES if re.search(rf"\b{r.id}\b", text)]
        assert not named, f"{path.relative_to(ROOT)} names {named}"


def test_a_rule_and_its_recognizer_live_in_one_module():
    for rule, found in RECOGNIZERS.items():
        assert found.read.__module__ == CHECKS[rule].__module__, rule


def _module(path: Path):
    return importlib.import_module(f"audits.rules.legality.{path.stem}")


def _assigned(fn: ast.AST) -> dict[str, list[ast.expr]]:
    """What each local name of a function is assigned (tuples unpacked by position)."""
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                out.setdefault(target.id, []).append(node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                for name, value in zip(target.elts, node.value.elts):
                    if isinstance(name, ast.Name):
                        out.setdefault(name.id, []).append(value)
    return out


def _kinds(expr: ast.expr, module, local: dict) -> set[str]:
    """The strings an expression can be, from literals, module constants and local assignments;
    an expression it cannot follow fails the test (a kind no one can check)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return {expr.value}
    if isinstance(expr, ast.IfExp):
        return _kinds(expr.body, module, local) | _kinds(expr.orelse, module, local)
    if isinstance(expr, ast.Name) and expr.id in local:
        return set().union(*(_kinds(v, module, local) for v in local[expr.id]))
    if isinstance(expr, ast.Name) and isinstance(getattr(module, expr.id, None), str):
        return {getattr(module, expr.id)}
    raise AssertionError(f"{module.__name__}: cannot tell which reading {ast.unparse(expr)} is")


def _given(path: Path) -> set[str]:
    """Every reading a rule module gives: the kind of each Verdict it makes or revises, each native
    finding, each of its words it looks up itself."""
    module, tree = _module(path), ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        local = _assigned(fn)
        for node in ast.walk(fn):
            kind = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "Verdict":
                    kind = node.args[1]
                elif node.func.id == "native_findings":
                    kind = node.args[3]
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "dataclasses.replace":
                kind = next((k.value for k in node.keywords if k.arg == "kind"), None)
            if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "WORDS":
                kind = node.slice
            if kind is not None:
                out |= _kinds(kind, module, local)
    return out


def test_every_reading_a_rule_module_gives_has_words():
    given = {path.stem: _given(path) for path in RULE_MODULES}
    assert sum(map(len, given.values())) >= 40, given  # the scan sees the readings at all
    for path in RULE_MODULES:
        rule = _module(path).RULES[0].id
        missing = given[path.stem] - set(WORDS.get(rule, {}))
        assert not missing, f"{rule}: readings without words: {sorted(missing)}"
