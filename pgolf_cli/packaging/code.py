"""The shipped `train_gpt.py` and its requirements.txt, built from the script that ran.

`wrapped` (the default) ships pgolf's smallest self-extracting form: the token-level minifier of
`audits.submission.codesize` (it never rewrites an expression, so code legal on the target Python stays
legal), raw LZMA2 kept as bytes in a latin-1 string literal, a three-line `exec` stub
(`trainer.codesize.pack`). Before shipping it, the result is checked three ways: the minified
program parses to the same syntax tree as the original once string statements (docstrings) are
set aside, the wrapper decodes back to exactly the minified text, and
the wrapper compiles. `plain` ships the file that ran, byte for byte.
"""

from __future__ import annotations

import ast
import dataclasses
import sys

from audits.submission import codesize
from audits.submission.imports import DISTRIBUTIONS, imports
from audits.submission.unwrap import Unreadable, unwrap
from pgolf_cli.packaging.request import PackageError

# Modules that come with the torch wheel: importable wherever torch is, never listed on their own.
WITH_TORCH = {"triton", "functorch", "torchgen"}


@dataclasses.dataclass(frozen=True)
class ShippedCode:
    form: str  # "wrapped" or "plain"
    data: bytes  # the train_gpt.py written to the folder; its length is the counted code bytes
    source: str  # the program it runs: the file that ran (plain) or its minified form (wrapped)


def ship(script: bytes, form: str) -> ShippedCode:
    try:
        text = codesize.read_source(script)
    except UnicodeDecodeError as exc:
        raise PackageError(f"train_gpt.py is not valid {exc.encoding} (byte {exc.start}); Python will "
                           "refuse to run it") from None
    except SyntaxError as exc:
        raise PackageError(f"train_gpt.py cannot be read: {exc.msg}; Python will refuse to run it") from None
    if form == "plain":
        return ShippedCode("plain", script, text)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    try:
        minified = codesize.minify(text)
    except codesize.MinifyError as exc:
        raise PackageError(f"train_gpt.py does not tokenize on Python {here} ({exc}); package under "
                           "the Python the run used, or use --code-form plain") from None
    _same_program(text, minified, here)
    wrapper = codesize.pack(minified)
    decoded = unwrap(codesize.read_source(wrapper), "train_gpt.py", _no_siblings)
    if decoded is None or decoded.source != minified:
        raise PackageError("the self-extracting wrapper does not decode to the minified source; "
                           "use --code-form plain and report this pgolf bug")
    compile(wrapper, "train_gpt.py", "exec")
    return ShippedCode("wrapped", wrapper, minified)


def _no_siblings(rel: str) -> bytes:
    raise Unreadable(f"the wrapper reads {rel}; it should be self-contained")


def _same_program(original: str, minified: str, here: str) -> None:
    try:
        before = ast.parse(original)
    except SyntaxError as exc:
        raise PackageError(f"train_gpt.py does not parse on Python {here} (line {exc.lineno}: "
                           f"{exc.msg}); package under the Python the run used, or use "
                           "--code-form plain") from None
    try:
        after = ast.parse(minified)
    except SyntaxError as exc:
        raise PackageError(f"minifying train_gpt.py broke line {exc.lineno} ({exc.msg}); use "
                           "--code-form plain and report this pgolf bug") from None
    if ast.dump(_without_string_statements(before)) != ast.dump(after):
        raise PackageError("the minified train_gpt.py is not the same program as the file that ran; "
                           "use --code-form plain and report this pgolf bug")


def _without_string_statements(tree: ast.AST) -> ast.AST:
    """The tree the minifier should produce: string-only statements removed, `pass` where a block
    would be left empty."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            kept = [s for s in block if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                             and isinstance(s.value.value, (str, bytes)))]
            setattr(node, field, kept or [ast.Pass()])
    return tree


def requirements_txt(source: str, torch_version: str | None) -> str:
    """requirements.txt for the third-party modules `source` imports unconditionally; optional
    imports (inside `try: ... except ImportError`) are named in a comment."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    required, optional = set(), set()
    for module, _line, is_optional in imports(source):
        if module in stdlib or module in WITH_TORCH:
            continue
        (optional if is_optional else required).add(DISTRIBUTIONS.get(module, module))
    optional -= required
    lines = ["# Third-party packages train_gpt.py imports (written by pgolf package)."]
    if torch_version:
        lines.append(f"# The runs logged PyTorch {torch_version}.")
    if optional:
        lines.append("# Optional, imported under try/except ImportError: " + ", ".join(sorted(optional)))
    lines.extend(sorted(required))
    return "\n".join(lines) + "\n"
