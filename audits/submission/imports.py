"""Which modules a script imports, and which of them the evaluation machine has: the facts the
requirements rule and the smoke import's classification share."""

from __future__ import annotations

import ast
import functools
import re

from audits.submission import trees

# The challenge's root requirements.txt (the reference environment), by import name, plus what
# ships with torch on Linux and FlashAttention, which the README FAQ names as fine to import.
REFERENCE = {
    "numpy", "tqdm", "torch", "huggingface_hub", "kernels", "setuptools", "pkg_resources",
    "typing_extensions", "datasets", "tiktoken", "sentencepiece",
    "triton", "functorch", "torchgen",
    "flash_attn", "flash_attn_interface", "flash_attn_3",
}
# Import name -> distribution name, where they differ.
DISTRIBUTIONS = {
    "yaml": "pyyaml", "sklearn": "scikit-learn", "PIL": "pillow", "cv2": "opencv-python",
    "python_minifier": "python-minifier", "mamba_ssm": "mamba-ssm", "google": "protobuf",
    "zstd": "zstandard", "attr": "attrs", "dateutil": "python-dateutil",
}
_OPTIONAL_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=16)  # asked per log and per rule about the same few scripts
def imports(source: str) -> tuple[tuple[str, int, bool], ...]:
    """(top-level module, line, optional) for every absolute import; optional = inside a try whose
    handler catches ImportError. Empty when the source does not parse here."""
    try:
        tree = trees.ast_module(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    found_imports = []
    stack = _children(tree, False)[::-1]  # iterative: hostile code can nest thousands deep
    while stack:
        node, optional = stack.pop()
        if isinstance(node, ast.Import):
            for alias in node.names:
                found_imports.append((alias.name.split(".")[0], node.lineno, optional))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found_imports.append((node.module.split(".")[0], node.lineno, optional))
        stack.extend(_children(node, optional)[::-1])
    return tuple(found_imports)


def _children(node: ast.AST, optional: bool) -> list[tuple[ast.AST, bool]]:
    """The child nodes in order, each with whether an import there is optional: the body of a try
    whose handler catches ImportError is."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Try) and any(_catches_import_error(h) for h in child.handlers):
            found += [(stmt, True) for stmt in child.body]
            found += [(stmt, optional) for part in (child.handlers, child.orelse, child.finalbody)
                      for stmt in part]
        else:
            found.append((child, optional))
    return found


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in _OPTIONAL_ERRORS for n in names)
