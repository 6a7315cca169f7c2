"""The Python-version family: syntax and library newer than the target, sources no Python
compiles, and self-extracting payloads that cannot be read."""

from __future__ import annotations

from audits import legality, pyversion
from audits.findings import Severity
from audits.registry import (FAIL, NEEDS_ACTION, WARN, Rule, check, found, issue, pgolf, pr, readme,
                             rules)
from audits.submission import display_name

RULES = rules(
    Rule("PY_SYNTAX_TOO_NEW", FAIL, "python",
         "No syntax newer than the target Python in any shipped .py file, after unwrapping.",
         (issue(1591, "records that need Python 3.12"), pr(1532)), level=NEEDS_ACTION),
    Rule("PY_STDLIB_TOO_NEW", WARN, "python",
         "No standard-library API newer than the target Python.",
         (issue(1591),), level=NEEDS_ACTION),
    Rule("PY_SYNTAX_ERROR", FAIL, "python",
         "Every shipped .py file, after unwrapping, is valid Python in some version.",
         (pgolf("a file that no Python compiles cannot run; it is reported apart from "
                "PY_SYNTAX_TOO_NEW because the fix is different"),
          readme("Submission Process, must compile and run")), level=NEEDS_ACTION),
    Rule("WRAPPER_UNREADABLE", FAIL, "python",
         "The payload of a self-extracting script decodes statically, within the size bound.",
         (pgolf("a payload that is corrupt, truncated, too large or built by code pgolf will not run "
                "cannot be audited, so every other check would pass on code nobody read"),),
        level=NEEDS_ACTION),
)


_HINTS = {
    pyversion.SYNTAX: "Rewrite it for the target Python (for f-strings: other quotes inside the braces, "
                      "or move the expression out of the f-string), or state the target with --python.",
    pyversion.ERROR: "Fix the syntax error: no Python can run this file.",
    pyversion.STDLIB: "Guard the use with `if sys.version_info >= (3, X):` or use an older equivalent "
                      "(tomli for tomllib, typing_extensions for typing names).",
}


def _problems(sub, options, rule: str):
    """The analysis of each distinct source that runs (a sibling executed by a stub is analysed
    once, under its own name), as findings of `rule`."""
    sources: dict[str, list] = {}
    readable = sorted((rel, s.source) for rel, s in sub.scripts.items() if s.source is not None)
    _, skipped = legality.within_budget(readable)
    for rel, script in sorted(sub.scripts.items()):
        if script.source is not None and rel not in skipped:
            sources.setdefault(script.source, []).append(script)
    if skipped:
        yield found(rule, legality.not_checked(skipped), severity=Severity.INFO, unchecked=True)
    for source, scripts in sources.items():
        scripts.sort(key=lambda s: (s.wrapper_note is not None, s.rel))
        script = scripts[0]
        others = [display_name(s.rel) for s in scripts[1:]]
        analysis = pyversion.analyse(source, options.target_python)
        syntax_count = sum(p.rule in (pyversion.SYNTAX, pyversion.ERROR) for p in analysis.problems)
        lines = source.splitlines()
        for p in analysis.problems:
            if p.rule != rule:
                continue
            message = p.message
            if p.first and syntax_count > 1:
                message += f"; Python {options.python_label} stops at this one first"
            if others:
                message += f" (also run by {', '.join(others)})"
            evidence = lines[p.line - 1].strip() if 0 < p.line <= len(lines) else ""
            yield found(rule, message, file=display_name(script.rel), line=p.line, column=p.column,
                        evidence=evidence[:200], hint=_HINTS[rule], via=script.via(p.line),
                        severity=Severity.WARN if p.severity == "WARN" else None)


@check("PY_SYNTAX_TOO_NEW")
def py_syntax_too_new(sub, options):
    """What it checks: every shipped .py file, after unwrapping self-extracting wrappers, uses
    only syntax the target Python accepts (default 3.10, `--python 3.X` to change). It knows
    PEP 701 f-strings (a quote of the enclosing kind, a backslash, a comment or a line break
    inside a replacement field, nesting that reuses quotes), `except*`, starred subscripts and
    `*args: *Ts` (3.11), type parameter lists and `type` statements (3.12), type parameter
    defaults (3.13), t-strings and `except A, B:` (3.14), and for older targets `match`,
    parenthesized context managers, relaxed decorators and unparenthesized `:=`. It warns about
    `return`/`break`/`continue` leaving a `finally` block when the target is 3.14 or later.
    Each finding gives the line and column where CPython 3.10 reports the error, and its
    message; the first one 3.10 reports is marked.

    Why it matters: a script that does not compile does not run. rules.md, PY_SYNTAX_TOO_NEW:
    "Syntax newer than the target Python ... in any shipped .py after unwrapping"; the seed case
    is `f"{", ".join(x)}"`, which 3.10 rejects with `f-string: expecting '}'` (PR #1532), and
    five merged records need 3.12 (issue #1591).

    Illegal: `log(f"{", ".join(x)}")`; `class C[T]: ...`; `x[*idx]` for a 3.10 target.

    Legal: `log(f"{', '.join(x)}")`; `class C(Generic[T]): ...`; `x[(*idx,)]`.

    Known limits: the f-string rules are CPython 3.10's own (re-implemented and checked
    against a real 3.10 on over a thousand snippets); for a 3.11 target the same rules apply,
    as 3.11 did not change f-strings. When several problems share one statement, 3.10's
    error-recovery pass can pick a different one first than pgolf says. Features are read with
    libcst; where libcst cannot read a statement (source invalid in every Python, see
    PY_SYNTAX_ERROR, or rarely valid code libcst does not know), the statements before it are
    still read and the f-string rules still run on the whole file. Expressions nested more than 500 levels deep are not
    walked (a warning says so).
    """
    yield from _problems(sub, options, pyversion.SYNTAX)


@check("PY_SYNTAX_ERROR")
def py_syntax_error(sub, options):
    """What it checks: every shipped .py file, after unwrapping, compiles on some Python: this
    interpreter's compiler (run on the source, never on the program) reports no error that a
    newer feature found by PY_SYNTAX_TOO_NEW would explain, and no string literal has escapes or
    mixtures that every Python refuses.

    Why it matters: the README asks that train_gpt.py "must successfully compile and run within
    the records folder"; a file that no Python compiles fails that everywhere, so it is reported
    apart from the version gate with its own fix.

    Illegal: `x = = 1`; `return` outside a function; `b"é"`; a source with a NUL byte.

    Legal: any file some Python 3 compiles.

    Known limits: errors are found by the Python running pgolf. On a Python older than 3.12, an
    error after a PEP 701 f-string is hidden behind that f-string (that interpreter stops
    there); the version gate still reports the f-string.
    """
    yield from _problems(sub, options, pyversion.ERROR)


@check("PY_STDLIB_TOO_NEW")
def py_stdlib_too_new(sub, options):
    """What it checks: no shipped .py file uses a standard-library module, function, class,
    constant or typing name newer than the target Python, resolved through imports and aliases
    (`import itertools as it; it.batched`, `from typing import Self`, `datetime.UTC`,
    `tomllib`, builtins such as `ExceptionGroup`). Uses under `if sys.version_info >= (3, X):`,
    `if TYPE_CHECKING:`, `if hasattr(...)`, in a `try:` that catches ImportError or
    AttributeError, and annotations under `from __future__ import annotations` are skipped.

    Why it matters: rules.md, PY_STDLIB_TOO_NEW: "Standard-library API newer than the target
    Python (tomllib, typing.Self, itertools.batched, datetime.UTC, ...)": the script compiles and
    then fails with ImportError or AttributeError on the evaluation machine.

    Illegal: `from itertools import batched` for a 3.10 target; `datetime.now(datetime.UTC)`.

    Legal: `try: import tomllib except ImportError: import tomli as tomllib`.

    Known limits: a table of about 130 names from "What's New" 3.9 to 3.14 (checked against a real
    3.10); new keyword arguments and methods reached through instances (`str.removeprefix` on a
    value) are not seen; any version guard counts, whatever version it compares with; a local
    name that shadows an import is not tracked.
    """
    yield from _problems(sub, options, pyversion.STDLIB)


@check("WRAPPER_UNREADABLE")
def wrapper_unreadable(sub, options):
    """What it checks: every self-extracting script (`exec(lzma.decompress(base64.b85decode(
    "...")))` and its relatives: lzma, xz, zlib, gzip, bz2, brotli, zstd, base85/64/32/16, hex,
    nested wrappers, a stub that runs a sibling file) decodes statically, never executed, into at
    most 16,000,000 bytes of UTF-8 source.

    Why it matters: every code check reads the unwrapped source. A payload that is corrupt,
    truncated, too large, or built by code pgolf will not run leaves the real program unread,
    and a decompression bomb must not take the audit down with it.

    Illegal: a base85 payload cut short; a payload that expands past 16 MB; `exec(decode(blob))`
    with a decoder defined in the file; a stub reading `../other/train_gpt.py`.

    Legal: the wrappers `pgolf package` writes, and the shapes merged records use.

    Known limits: only wrapper-shaped files are unwrapped (imports, constant assignments and one
    `exec`); an `exec` of a payload inside a larger program is not followed.
    """
    for rel, script in sorted(sub.scripts.items()):
        if script.wrapper_error is not None:
            yield found("WRAPPER_UNREADABLE", f"the self-extracting payload cannot be read: "
                        f"{script.wrapper_error}", file=display_name(rel), line=script.wrapper_error_line,
                        hint="Ship the plain source, or a standard wrapper (pgolf package writes one).")
