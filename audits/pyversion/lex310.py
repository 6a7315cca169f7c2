"""CPython 3.10's tokenizer, re-implemented in Python for the syntax gate.

Python 3.12 (PEP 701) changed how f-strings are tokenized, so a 3.12 tokenizer (or libcst) cannot
say where 3.10 ends a string. This module follows 3.10's `Parser/tokenizer.c`: the same string
prefixes and string ends, the same bracket, indentation and number rules, and the same error
messages. It produces tokens as offsets into the source; nothing is evaluated.

The source must already have its newlines translated to "\\n" and end with one, as CPython does
before tokenizing (see `normalize`).
"""

from __future__ import annotations

import dataclasses
import re

MAXLEVEL = 200  # brackets nested deeper are an error in every CPython 3
MAXINDENT = 100
TABSIZE = 8

NAME, NUMBER, STRING, OP, NEWLINE, INDENT, DEDENT, ENDMARKER = (
    "NAME", "NUMBER", "STRING", "OP", "NEWLINE", "INDENT", "DEDENT", "ENDMARKER")

_THREE = {"**=", "...", "//=", "<<=", ">>="}
_TWO = {"!=", "%=", "&=", "**", "*=", "+=", "-=", "->", "//", "/=", ":=", "<<", "<=", "<>", "==",
        ">=", ">>", "@=", "^=", "|="}
_OPENING = {"(": ")", "[": "]", "{": "}"}
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACES = re.compile(r"[ \t\f]*")
_DIGITS = re.compile(r"[0-9]+")
_KEYWORD_AFTER_NUMBER = ("and", "else", "for", "if", "in", "is", "or", "not")


@dataclasses.dataclass(frozen=True)
class Token:
    kind: str
    start: int  # offset of the first character
    end: int  # offset after the last character


@dataclasses.dataclass(frozen=True)
class LexError:
    """The first tokenizer error. `at` is where the parser meets it (for ordering against parser
    errors); `pos` is the character CPython points at. `sets_exception`: raised inside the
    tokenizer, so it also replaces a later generic "invalid syntax" (3.10 scans the rest of the
    file for these). `open_bracket`: the error is the end of the file inside brackets, reported
    at that bracket."""

    message: str
    at: int
    pos: int
    sets_exception: bool = True
    open_bracket: int | None = None


@dataclasses.dataclass
class Lexed:
    tokens: list[Token]
    error: LexError | None


def normalize(source: str) -> str:
    """Newlines as CPython's tokenizer sees them: \\r\\n and \\r become \\n, and a final newline."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") else text + "\n"


def _is_name_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_") or ord(ch) >= 128


def _string_end(src: str, quote_at: int) -> tuple[int, int | None]:
    """End offset of the string whose first quote is at `quote_at`, as 3.10 scans it, or
    (-1, offset where the scan failed) when it is unterminated."""
    q = src[quote_at]
    n = len(src)
    if src.startswith(q * 3, quote_at):
        i = quote_at + 3
        while True:
            j = src.find(q * 3, i)
            k = src.find("\\", i)
            if j < 0:
                return -1, n
            if 0 <= k < j:
                i = k + 2  # skip the escaped character, whatever it is
                continue
            return j + 3, None
    if src.startswith(q * 2, quote_at):
        return quote_at + 2, None  # the empty string
    i = quote_at + 1
    while i < n:
        ch = src[i]
        if ch == q:
            return i + 1, None
        if ch == "\n":
            return -1, i
        if ch == "\\":
            i += 1  # an escaped newline continues the string
        i += 1
    return -1, n


def _prefix_length(src: str, i: int) -> int:
    """Length of a string prefix at `i` that is followed by a quote, or -1 (3.10's saw_b/r/u/f)."""
    saw_b = saw_r = saw_u = saw_f = False
    j = i
    while j < len(src):
        c = src[j].lower()
        if c == "b" and not (saw_b or saw_u or saw_f):
            saw_b = True
        elif c == "u" and not (saw_b or saw_u or saw_r or saw_f):
            saw_u = True
        elif c == "r" and not (saw_r or saw_u):
            saw_r = True
        elif c == "f" and not (saw_f or saw_b or saw_u):
            saw_f = True
        else:
            return -1
        j += 1
        if j < len(src) and src[j] in "'\"":
            return j - i
    return -1


def _line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


class TokenizeError(Exception):
    def __init__(self, error: LexError):
        super().__init__(error.message)
        self.error = error


def _number_end(src: str, i: int) -> int:
    """End of the number literal at `i`, or raise _Fail with 3.10's message."""

    def fail(message, pos):
        raise TokenizeError(LexError(message, i, pos))

    def end_ok(j, kind):
        # 3.10 accepts a number glued to a keyword that may follow one (`1if x else 2`).
        if j < len(src) and _is_name_char(src[j]):
            if any(src.startswith(k, j) for k in _KEYWORD_AFTER_NUMBER):
                return j
            fail(f"invalid {kind} literal", j - 1)
        return j

    def decimal_tail(j):
        while True:
            m = _DIGITS.match(src, j)
            j = m.end()
            if j < len(src) and src[j] == "_":
                if j + 1 < len(src) and src[j + 1].isdigit() and src[j + 1].isascii():
                    j += 1
                    continue
                fail("invalid decimal literal", j)
            return j

    def fraction_and_exponent(j):
        if j < len(src) and src[j].isascii() and src[j].isdigit():
            j = decimal_tail(j)
        if j < len(src) and src[j] in "eE":
            e = j
            j += 1
            if j < len(src) and src[j] in "+-":
                j += 1
                if not (j < len(src) and src[j].isascii() and src[j].isdigit()):
                    fail("invalid decimal literal", j - 1)
            elif not (j < len(src) and src[j].isascii() and src[j].isdigit()):
                end_ok(e, "decimal")
                return e  # `1e` followed by a keyword: the number is `1`
            j = decimal_tail(j)
        if j < len(src) and src[j] in "jJ":
            return end_ok(j + 1, "imaginary")
        return end_ok(j, "decimal")

    if src[i] == ".":
        return fraction_and_exponent(i + 1)
    if src[i] == "0" and i + 1 < len(src) and src[i + 1] in "xXoObB":
        kind, digits = {"x": ("hexadecimal", "0123456789abcdefABCDEF"), "o": ("octal", "01234567"),
                        "b": ("binary", "01")}[src[i + 1].lower()]
        j = i + 2
        while True:
            if j < len(src) and src[j] == "_":
                j += 1
            if not (j < len(src) and src[j] in digits):
                if kind != "hexadecimal" and j < len(src) and src[j].isascii() and src[j].isdigit():
                    fail(f"invalid digit '{src[j]}' in {kind} literal", j)
                fail(f"invalid {kind} literal", j - 1)
            while j < len(src) and src[j] in digits:
                j += 1
            if not (j < len(src) and src[j] == "_"):
                break
        if kind != "hexadecimal" and j < len(src) and src[j].isascii() and src[j].isdigit():
            fail(f"invalid digit '{src[j]}' in {kind} literal", j)
        return end_ok(j, kind)
    if src[i] == "0":
        j = i + 1
        while True:
            if j < len(src) and src[j] == "_":
                if not (j + 1 < len(src) and src[j + 1].isascii() and src[j + 1].isdigit()):
                    fail("invalid decimal literal", j)
                j += 1
            if not (j < len(src) and src[j] == "0"):
                break
            j += 1
        nonzero = j < len(src) and src[j].isascii() and src[j].isdigit()
        if nonzero:
            j = decimal_tail(j)
        if j < len(src) and src[j] in ".eEjJ":
            return fraction_and_exponent(j + 1 if src[j] == "." else j)
        if nonzero:
            raise TokenizeError(LexError("leading zeros in decimal integer literals are not permitted; use an "
                                 "0o prefix for octal integers", i, i))
        return end_ok(j, "decimal")
    j = decimal_tail(i)
    if j < len(src) and src[j] == ".":
        return fraction_and_exponent(j + 1)
    return fraction_and_exponent(j)


def _name_end(src: str, i: int) -> int:
    """End of the identifier at `i`; non-ASCII characters must be valid identifier characters."""
    m = _ASCII_NAME.match(src, i)
    j = m.end() if m else i
    if j < len(src) and ord(src[j]) >= 128 or (m is None and ord(src[i]) >= 128):
        while j < len(src) and _is_name_char(src[j]):
            j += 1
        run = src[i:j]
        for k, ch in enumerate(run):
            if not (ch.isidentifier() if k == 0 else ("a" + ch).isidentifier()):
                bad = i + k
                shown = f"invalid character '{ch}' (U+{ord(ch):04X})" if ch.isprintable() else \
                    f"invalid non-printable character U+{ord(ch):04X}"
                raise TokenizeError(LexError(shown, i, bad))
    return j


def _indentation(message: str, pos: int) -> TokenizeError:
    # 3.10 reports these through the parser, so they never replace an earlier error.
    return TokenizeError(LexError(message, pos, pos, sets_exception=False))


def tokenize(src: str) -> Lexed:
    """All tokens of `src` (normalized) up to the first tokenizer error, and that error."""
    tokens: list[Token] = []
    try:
        tokens.extend(generate(src))
    except TokenizeError as stop:
        return Lexed(tokens, stop.error)
    return Lexed(tokens, None)


def generate(src: str, start: int = 0, in_brackets: bool = False):
    """Yield tokens from offset `start` (the start of a line, or with `in_brackets` any place
    inside brackets); raise TokenizeError at the first error."""
    n = len(src)
    i = start
    # (opening char, offset); "?" stands for the unseen bracket around `start`, closed by any.
    brackets: list[tuple[str, int]] = [("?", start)] if in_brackets else []
    indents = [(0, 0)]  # (col, alternative col with tab size 1)
    at_line_start = not in_brackets
    blank = False  # the current line holds only blanks and a comment: it ends with no NEWLINE
    while True:
        if at_line_start:
            at_line_start = False
            col = alt = 0
            j = i
            while j < n and src[j] in " \t\f":
                c = src[j]
                if c == " ":
                    col, alt = col + 1, alt + 1
                elif c == "\t":
                    col, alt = (col // TABSIZE + 1) * TABSIZE, alt + 1
                else:
                    col = alt = 0
                j += 1
            blank = j >= n or src[j] in "#\n"
            if not blank and not brackets:
                top_col, top_alt = indents[-1]
                if col == top_col:
                    if alt != top_alt:
                        raise _indentation("inconsistent use of tabs and spaces in indentation", j)
                elif col > top_col:
                    if len(indents) >= MAXINDENT:
                        raise _indentation("too many levels of indentation", j)
                    if alt <= top_alt:
                        raise _indentation("inconsistent use of tabs and spaces in indentation", j)
                    indents.append((col, alt))
                    yield Token(INDENT, j, j)
                else:
                    while len(indents) > 1 and col < indents[-1][0]:
                        indents.pop()
                        yield Token(DEDENT, j, j)
                    if col != indents[-1][0]:
                        raise _indentation("unindent does not match any outer indentation level", j)
                    if alt != indents[-1][1]:
                        raise _indentation("inconsistent use of tabs and spaces in indentation", j)
            i = j
        i = _SPACES.match(src, i).end()
        here = i
        if i < n and src[i] == "#":
            i = src.find("\n", i)
        if i >= n:
            if brackets:
                raise TokenizeError(LexError(f"'{brackets[-1][0]}' was never closed", n, brackets[-1][1],
                                     sets_exception=False, open_bracket=brackets[-1][1]))
            for _ in indents[1:]:
                yield Token(DEDENT, n, n)
            yield Token(ENDMARKER, n, n)
            return
        c = src[i]
        if c == "\n":
            at_line_start = True
            i += 1
            if not brackets and not blank:
                yield Token(NEWLINE, here, i - 1)
            continue
        if c.isascii() and (c.isalpha() or c == "_") or ord(c) >= 128:
            plen = _prefix_length(src, i) if c in "bBrRuUfF" else -1
            if plen < 0:
                j = _name_end(src, i)
                yield Token(NAME, i, j)
                i = j
                continue
            i += plen
            c = src[i]
        if c in "'\"":
            end, failed_at = _string_end(src, i)
            if end < 0:
                triple = src.startswith(c * 3, i)
                detected = _line_of(src, min(failed_at, n - 1))  # 3.10 counts no line after the last
                what = "unterminated triple-quoted string literal" if triple else "unterminated string literal"
                raise TokenizeError(LexError(f"{what} (detected at line {detected})", here, here))
            yield Token(STRING, here, end)
            i = end
            continue
        if c.isdigit() and c.isascii() or (c == "." and i + 1 < n and src[i + 1].isdigit() and src[i + 1].isascii()):
            j = _number_end(src, i)
            yield Token(NUMBER, i, j)
            i = j
            continue
        if c == "\\":
            if i + 1 >= n or src[i + 1] != "\n":
                raise TokenizeError(LexError("unexpected character after line continuation character", i, i + 1,
                                     sets_exception=False))
            i += 2
            blank = False
            if i >= n:
                raise TokenizeError(LexError("unexpected EOF while parsing", i, i - 1, sets_exception=False))
            continue
        if src[i:i + 3] in _THREE:
            yield Token(OP, i, i + 3)
            i += 3
            continue
        if src[i:i + 2] in _TWO:
            yield Token(OP, i, i + 2)
            i += 2
            continue
        if c in _OPENING:
            if len(brackets) >= MAXLEVEL:
                raise TokenizeError(LexError("too many nested parentheses", i, i))
            brackets.append((c, i))
        elif c in ")]}":
            if not brackets:
                raise TokenizeError(LexError(f"unmatched '{c}'", i, i))
            opening, where = brackets.pop()
            if opening != "?" and _OPENING[opening] != c:
                line = _line_of(src, where)
                suffix = f" on line {line}" if line != _line_of(src, i) else ""
                raise TokenizeError(LexError(f"closing parenthesis '{c}' does not match opening parenthesis "
                                     f"'{opening}'{suffix}", i, i))
        elif not c.isprintable():
            raise TokenizeError(LexError(f"invalid non-printable character U+{ord(c):04X}", i, i))
        yield Token(OP, i, i + 1)
        i += 1

