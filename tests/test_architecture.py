"""The maps of the project stay true: docs/architecture.md and trainer/__init__.py name every
module of trainer/ and audits/ and nothing else, no package imports one above it, and no package
holds an import circle."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from audits import catalogue

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# Lowest first: a package imports only those before it.
PACKAGES = ("trainer", "audits", "pgolf_cli")


def _modules(package: str) -> set[str]:
    """Module paths relative to the package, without `.py`: `model`, `legality/interp`."""
    base = ROOT / package
    return {p.relative_to(base).with_suffix("").as_posix() for p in base.rglob("*.py")}


def _section(title: str) -> str:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def _table_rows(section: str) -> list[str]:
    return [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]


def _named(cell: str) -> set[str]:
    return set(re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)`", cell))


def test_the_trainer_map_and_the_package_docstring_name_every_module_and_no_other():
    modules = _modules("trainer") - {"__init__"}
    rows = _table_rows(_section("trainer/"))
    in_map = set().union(*(_named(row.split("|")[2]) for row in rows[1:]))
    assert in_map == modules, (f"docs/architecture.md's trainer/ table: missing {sorted(modules - in_map)}, "
                               f"not modules {sorted(in_map - modules)}")
    listed = _named(ast.get_docstring(ast.parse((ROOT / "trainer" / "__init__.py").read_text())))
    assert listed == modules, (f"trainer/__init__.py's list: missing {sorted(modules - listed)}, "
                               f"not modules {sorted(listed - modules)}")


def test_the_audit_map_names_every_module_and_no_other():
    modules = _modules("audits")
    named = set()
    for row in _table_rows(_section("audits/"))[1:]:
        cell = row.split("|")[2]
        # `legality/` (`__init__`, `interp`, ...) names a folder's modules; a bare `stats` a module
        for folder, inside in re.findall(r"`([a-z_/]+)/` \(([^)]*)\)", cell):
            named |= {f"{folder}/{name}" for name in _named(inside)}
        bare = re.sub(r"`[a-z_/]+/` \([^)]*\)", "", cell)
        named |= _named(bare)
    named |= {"__init__"}  # the package itself: its version and docstring
    # `RULE` in `rules/legality/` stands for each legality rule's module, named after it
    assert "rules/legality/RULE" in named, "docs/architecture.md's audits/ table: no `RULE` in `rules/legality/`"
    named.remove("rules/legality/RULE")
    named |= {f"rules/legality/{rule.id.lower()}" for rule in catalogue.RULES if rule.family == "legality"}
    assert named == modules, (f"docs/architecture.md's audits/ table: missing {sorted(modules - named)}, "
                              f"not modules {sorted(named - modules)}")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_package_imports_one_above_it_or_holds_a_circle(package):
    above = PACKAGES[PACKAGES.index(package) + 1:]
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for name in names:
                assert name.split(".")[0] not in above, f"{path.relative_to(ROOT)} imports {name}"
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_graph.py"), package],
                         capture_output=True, text=True, check=True).stdout
    assert "circles: 0" in out, out
