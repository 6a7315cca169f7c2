"""The import graph of a package: its modules, their import chains, circles and imports that run
against the layering.

    python scripts/import_graph.py audits            # a summary
    python scripts/import_graph.py audits --edges    # and every edge

Every import of the package's own modules counts, at module level, inside a function (a lazy
import is still a dependency) or under `if TYPE_CHECKING:` (an annotation's meaning depends on
it too). A module's floor is the length of the longest import chain below it; a circle is a set
of modules that import each other. LAYERS below states the intended order of audits/, lowest
first: an import from a module into a higher layer is reported as running back up.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The intended layers of audits/, lowest first: a module may import its own layer or lower ones.
LAYERS = (
    ("audits", "audits.findings", "audits.stats", "audits.leaderboard", "audits.timelimit"),
    ("audits.context", "audits.submission"),
    ("audits.registry",),
    ("audits.pyversion", "audits.legality", "audits.smoke"),
    ("audits.rules",),
    ("audits.catalogue", "audits.engine", "audits.compliance", "audits.waivers"),
    ("audits.report", "audits.api"),
)


def modules(package: str) -> dict[str, Path]:
    base = ROOT / package
    found = {}
    for path in sorted(base.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `name` imports (a name imported from a package counts as its
    submodule where one exists)."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            named = [f"{base}.{alias.name}" for alias in node.names]
            # the package itself counts only where a name is not one of its submodules
            targets = named + ([base] if any(n not in known for n in named) else [])
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def layer_of(name: str) -> int | None:
    best, level = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            inside = name.startswith(prefix + ".") and "." in prefix  # the root holds only itself
            if (name == prefix or inside) and len(prefix) > best:
                best, level = len(prefix), index
    return level


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def floors(graph: dict[str, set[str]], cycle_members: set[str]) -> dict[str, int]:
    depth: dict[str, int] = {}

    def visit(node: str, seen: frozenset[str]) -> int:
        if node in depth:
            return depth[node]
        below = [visit(child, seen | {node}) for child in graph[node] if child not in seen]
        depth[node] = 1 + max(below, default=0)
        return depth[node]

    sys.setrecursionlimit(10_000)
    for node in graph:
        visit(node, frozenset())
    return depth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package")
    parser.add_argument("--edges", action="store_true", help="print every import edge")
    args = parser.parse_args()
    found = modules(args.package)
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    loops = circles(graph)
    depth = floors(graph, {m for c in loops for m in c})
    upward = [(a, b) for a, targets in graph.items() for b in sorted(targets)
              if layer_of(a) is not None and layer_of(b) is not None and layer_of(b) > layer_of(a)]
    print(f"{len(found)} modules, {sum(len(t) for t in graph.values())} imports, "
          f"{max(depth.values(), default=0)} floors (longest import chain)")
    print(f"circles: {len(loops)}")
    for loop in loops:
        print("  " + " <-> ".join(loop))
    unlayered = sorted(name for name in found if layer_of(name) is None)
    print(f"imports into a higher layer: {len(upward)}")
    for a, b in upward:
        print(f"  {a} -> {b}")
    if unlayered:
        print(f"modules outside LAYERS: {', '.join(unlayered)}")
    if args.edges:
        for name in sorted(graph):
            print(f"{name} [floor {depth[name]}] -> {', '.join(sorted(graph[name])) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
