"""CPython 3.10's f-string parser (`Parser/string_parser.c`), re-implemented to find its errors.

Python 3.10 reads an f-string as one string token (see `lex310`), then scans its text for
replacement fields: no backslash and no `#` inside a field, quotes inside a field must differ from
the enclosing ones (the token already ended at the first matching quote), format specs nest at
most two levels. Each field's expression is then compiled as `(expression)` by the full parser;
`check` hands that step to the caller, which knows the rest of the grammar.
"""

from __future__ import annotations

import codecs
import dataclasses
import warnings
from collections.abc import Callable

_SPACE = " \t\n\r\x0b\x0c"
_CLOSING = {")": "(", "]": "[", "}": "{"}


@dataclasses.dataclass(frozen=True)
class FstringError:
    """An error of the f-string scanner. CPython 3.10 reports these at the token that follows the
    string (its lookahead), which the caller knows; `detail` is set by the expression compiler
    for errors it places itself."""

    message: str
    detail: object = None


# compile_expr(start, end) -> error or None; offsets into the token text of the expression.
CompileExpr = Callable[[int, int], "FstringError | None"]


def split_prefix(text: str) -> tuple[str, int, int]:
    """(prefix, body start, body end) of a string token's text."""
    q = 0
    while text[q] not in "'\"":
        q += 1
    quote = text[q]
    qlen = 3 if text.startswith(quote * 3, q) and len(text) - q >= 6 else 1
    return text[:q], q + qlen, len(text) - qlen


def check(text: str, compile_expr: CompileExpr) -> FstringError | None:
    """The first error Python 3.10 reports for the f-string token `text`, or None."""
    prefix, start, end = split_prefix(text)
    raw = "r" in prefix.lower()
    try:
        _concat(text, start, end, raw, 0, compile_expr)
    except _Stop as stop:
        return stop.error
    return None


class _Stop(Exception):
    def __init__(self, error: FstringError):
        self.error = error


def _fail(message: str):
    raise _Stop(FstringError(message))


def _concat(s: str, i: int, end: int, raw: bool, level: int, compile_expr: CompileExpr) -> int:
    """`_PyPegen_FstringParser_ConcatFstring`: literals and fields until the end or a '}'."""
    while True:
        i, doubled = _find_literal(s, i, end, raw, level)
        if doubled:
            continue
        if i >= end or s[i] == "}":
            break
        i = _find_expr(s, i, end, raw, level, compile_expr)
    if level == 0 and i < end - 1:
        _fail("f-string: unexpected end of string")
    if level != 0 and (i >= end or s[i] != "}"):
        _fail("f-string: expecting '}'")
    return i


def _find_literal(s: str, i: int, end: int, raw: bool, level: int) -> tuple[int, bool]:
    """`fstring_find_literal`: the literal up to a '{' (or '}' in a format spec)."""
    start = i
    doubled = False
    while i < end:
        ch = s[i]
        i += 1
        if not raw and ch == "\\" and i < end:
            ch = s[i]
            i += 1
            if ch == "N":
                # "\N{NAME}": its braces are not a field. 3.10 consumes the next character even
                # when it is not '{'.
                if i < end:
                    i += 1
                    if s[i - 1] == "{":
                        while i < end:
                            i += 1
                            if s[i - 1] == "}":
                                break
                continue
        if ch in "{}":
            if level == 0:
                if i < end and s[i] == ch:
                    doubled = True
                    _decode(s[start:i], raw)
                    return i + 1, True
                if ch == "}":
                    _fail("f-string: single '}' is not allowed")
            i -= 1
            break
    _decode(s[start:i], raw)
    return i, doubled


def _decode(literal: str, raw: bool) -> None:
    if not raw:
        message = literal_error(literal, False)
        if message:
            _fail(message)


def literal_error(body: str, is_bytes: bool) -> str | None:
    """3.10's error for the escapes of a non-raw string literal's body, or None."""
    if is_bytes:
        if not body.isascii():
            return "bytes can only contain ASCII literal characters"
        if "\\" not in body:
            return None
        try:
            with warnings.catch_warnings():  # invalid escapes only warn
                warnings.simplefilter("ignore")
                codecs.escape_decode(body.encode("ascii"))
        except ValueError as exc:
            return f"(value error) {exc}"
        return None
    if "\\" not in body:
        return None
    # CPython 3.10 rewrites non-ASCII characters as \U escapes (and a backslash before one as
    # \u005c) before decoding, so error positions count in that rewritten text.
    out = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch == "\\":
            out.append(ch)
            i += 1
            if i >= n or ord(body[i]) >= 128:
                out.append("u005c")
                if i >= n:
                    break
            ch = body[i]
        out.append(ch if ord(ch) < 128 else f"\\U{ord(ch):08x}")
        i += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            "".join(out).encode("ascii").decode("unicode_escape")
    except UnicodeDecodeError as exc:
        return f"(unicode error) {exc}"
    return None


def _find_expr(s: str, i: int, end: int, raw: bool, level: int, compile_expr: CompileExpr) -> int:
    """`fstring_find_expr`: one replacement field, from its '{' to after its '}'."""
    if level >= 2:
        _fail("f-string: expressions nested too deeply")
    i += 1
    expr_start = i
    quote = ""
    triple = False
    stack: list[str] = []
    while i < end:
        ch = s[i]
        if ch == "\\":
            _fail("f-string expression part cannot include a backslash")
        if quote:
            if ch == quote:
                if triple:
                    if i + 2 < end and s[i + 1] == ch and s[i + 2] == ch:
                        i += 2
                        quote, triple = "", False
                else:
                    quote = ""
            i += 1
            continue
        if ch in "'\"":
            if i + 2 < end and s[i + 1] == ch and s[i + 2] == ch:
                triple = True
                i += 2
            quote = ch
        elif ch in "([{":
            if len(stack) >= 200:
                _fail("f-string: too many nested parenthesis")
            stack.append(ch)
        elif ch == "#":
            _fail("f-string expression part cannot include '#'")
        elif not stack and ch in "!:}=<>":
            if i + 1 < end:
                nxt = s[i + 1]
                if (ch, nxt) in (("!", "="), ("=", "="), ("<", "="), (">", "=")):
                    i += 2
                    continue
                if ch in "<>":
                    i += 1
                    continue
            break
        elif ch in ")]}":
            if not stack:
                _fail(f"f-string: unmatched '{ch}'")
            opening = stack.pop()
            if opening != _CLOSING[ch]:
                _fail(f"f-string: closing parenthesis '{ch}' does not match opening parenthesis '{opening}'")
        i += 1
    expr_end = i
    if quote:
        _fail("f-string: unterminated string")
    if stack:
        _fail(f"f-string: unmatched '{stack[-1]}'")
    if i >= end:
        _fail("f-string: expecting '}'")
    if not s[expr_start:expr_end].strip(" \t\n\f"):
        _fail("f-string: empty expression not allowed")
    error = compile_expr(expr_start, expr_end)
    if error is not None:
        raise _Stop(error)
    if s[i] == "=":
        i += 1
        while s[i] in _SPACE:
            i += 1
    if s[i] == "!":
        i += 1
        if i >= end:
            _fail("f-string: expecting '}'")
        conversion = s[i]
        i += 1
        if conversion not in "sra":
            _fail("f-string: invalid conversion character: expected 's', 'r', or 'a'")
    if i < end and s[i] == ":":
        i += 1
        if i >= end:
            _fail("f-string: expecting '}'")
        i = _concat(s, i, end, raw, level + 1, compile_expr)
    if i >= end or s[i] != "}":
        _fail("f-string: expecting '}'")
    return i + 1
