"""Resolve names through the script's imports: `F.cross_entropy` -> `torch.nn.functional.cross_entropy`.

libcst's QualifiedNameProvider does this with full scope analysis, at about 1.7 s for a 120 KB
record script. Training scripts import at the top of the file or of a function and almost never
rebind an import alias, so one table of every import statement in the file (gathered with the
function table, see program.py) is enough.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as a string, or None when the expression is not a plain dotted name."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def add(node: cst.Import | cst.ImportFrom, table: dict[str, str], package: str = "") -> None:
    """Record the aliases an import statement binds (`import torch.nn.functional as F`); a
    relative import (`from .mod import f`) is read from `package`, the importing script's."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted(alias.name)
            if not full:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                table[alias.asname.name.value] = full
            else:
                table[full.split(".")[0]] = full.split(".")[0]
        return
    if isinstance(node.names, cst.ImportStar):
        return
    base = dotted(node.module) if node.module is not None else ""
    if node.relative:
        parts = package.split(".") if package else []
        up = len(node.relative) - 1
        if up > len(parts):
            return
        base = ".".join([*parts[:len(parts) - up], *([base] if base else [])])
    for alias in node.names:
        name = dotted(alias.name)
        if not base or not name:
            continue
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        table[local] = f"{base}.{name}" if base else name


def add_alias(node: cst.Assign, table: dict[str, str], keep: Callable[[str], bool]) -> None:
    """A module-level name bound to an imported function (`_E = os.environ.get`, as minifiers
    shorten repeated calls) stands for it, where `keep` says the function matters."""
    if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
        return
    full = qualified(node.value, table)
    if full is not None and keep(full):
        table[node.targets[0].target.value] = full


def qualified(node: cst.BaseExpression, table: dict[str, str]) -> str | None:
    """The imported name `node` refers to (`torch.optim.AdamW`), or None for a local value."""
    name = dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head not in table:
        return None
    return table[head] + ("." + rest if rest else "")
