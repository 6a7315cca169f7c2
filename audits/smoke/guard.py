"""Find, without running it, a script that would start its work as soon as it is imported."""

from __future__ import annotations

import ast

from audits.submission import trees


def starts_on_import(source: str) -> tuple[int, str] | None:
    """(line, what) of the statement that would start the work, for a script with no
    `if __name__ == "__main__":` guard that calls one of its own functions or loops at the top
    level. None for a guarded script, one that only defines things, or one that does not parse
    (the import reports the syntax error)."""
    try:
        tree = trees.ast_module(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if any(isinstance(node, ast.If) and _is_main_test(node.test) for node in tree.body):
        return None
    functions = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in tree.body:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            return node.lineno, "a loop at the top level"
        call = node.value if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in functions:
            return node.lineno, f"a call of {call.func.id}() at the top level"
    return None


def _is_main_test(test: ast.expr) -> bool:
    """`__name__ == "__main__"`, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))
