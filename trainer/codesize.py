"""Code bytes: minify, compress, wrap in a self-extracting stub.

Two stubs. The merged records' (`wrap`: raw LZMA2 in base85 text) is how the audit counts code it
did not build (`compact_form`). pgolf ships its own (`pack`): the same LZMA2 stream kept as bytes
in a string literal of a file that declares the latin-1 encoding (PEP 263, read so by every
Python 3), escaping only what a literal cannot hold; that costs about 2% over the compressed
bytes where base85 costs 25%. The file's length is its count either way.

Shared by the trainer (the `Code size (compressed)` log line, computed inside the single-file
bundle, which cannot import pgolf) and the audit (`audits.submission.codesize`), so both always agree.
Standard library only. A record bundle is written already minified: it counts itself as it is.

The minifier works on tokens, never on the syntax tree, so it cannot rewrite an expression into a
form the target Python does not accept (a tree-based minifier run on 3.12 turns `f"{', '.join(x)}"`
into `f"{", ".join(x)}"`, which 3.10 rejects). It drops comments, docstrings and blank lines,
indents with one space, and joins the tokens of each logical line with the fewest spaces that keep
them apart. f-strings are copied from the source verbatim.
"""

from __future__ import annotations

import ast
import base64
import io
import lzma
import token
import tokenize

from trainer.extras import EXTRAS

WRAPPER_HEAD = 'import lzma as L,base64 as B\nexec(L.decompress(B.b85decode("'
WRAPPER_TAIL = '"),format=L.FORMAT_RAW,filters=[{"id":L.FILTER_LZMA2}]))\n'
PACKED_HEAD = '# coding: latin-1\nimport lzma as L\nexec(L.decompress("'
PACKED_TAIL = '".encode("latin-1"),format=L.FORMAT_RAW,filters=[{"id":L.FILTER_LZMA2}]))\n'
_LZMA_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]
# What a one-line string literal cannot hold as itself (NUL as three octal digits, so that a digit
# after it is never read into the escape).
_ESCAPES = {0: "\\000", ord("\n"): "\\n", ord("\r"): "\\r", ord('"'): '\\"', ord("\\"): "\\\\"}

_SKIP = {token.COMMENT, token.NL, token.ENCODING, token.ENDMARKER}
_FSTRING_START = getattr(token, "FSTRING_START", None)
_FSTRING_END = getattr(token, "FSTRING_END", None)


class MinifyError(ValueError):
    """The source does not tokenize on this Python; the caller falls back to the raw text."""


def minify(source: str) -> str:
    """Source with comments, docstrings and redundant whitespace removed; same program."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError) as exc:
        raise MinifyError(str(exc)) from exc
    bad = next((t for t in tokens if t.type == token.ERRORTOKEN and t.string.strip()), None)
    if bad is not None:
        raise MinifyError(f"cannot tokenize {bad.string!r} at line {bad.start[0]}")
    lines = source.splitlines(keepends=True)
    out: list[str] = []
    depth = 0
    line_parts: list[str] = []
    prev: tokenize.TokenInfo | None = None
    at_statement_start = True
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == token.INDENT:
            depth += 1
        elif tok.type == token.DEDENT:
            depth -= 1
        elif tok.type == token.NEWLINE:
            if line_parts:
                out.append(" " * depth + "".join(line_parts) + "\n")
            line_parts, prev, at_statement_start = [], None, True
        elif tok.type in _SKIP:
            pass
        elif at_statement_start and tok.type == token.STRING and _is_bare_string(tokens, i):
            # A docstring or other string statement: drop it, keep the block non-empty.
            i = _skip_statement(tokens, i)
            if _block_would_be_empty(tokens, i):
                out.append(" " * depth + "pass\n")
            continue
        else:
            if tok.type == _FSTRING_START:
                end = _fstring_end(tokens, i)
                text = _slice(lines, tok.start, tokens[end].end)
                tok_for_spacing = tokenize.TokenInfo(token.STRING, text, tok.start, tokens[end].end, tok.line)
                i = end
            else:
                text, tok_for_spacing = tok.string, tok
            if prev is not None and _needs_space(prev, tok_for_spacing):
                line_parts.append(" ")
            line_parts.append(text)
            prev = tok_for_spacing
            at_statement_start = False
        i += 1
    return "".join(out)


def _slice(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    (r0, c0), (r1, c1) = start, end
    if r0 == r1:
        return lines[r0 - 1][c0:c1]
    return lines[r0 - 1][c0:] + "".join(lines[r0:r1 - 1]) + lines[r1 - 1][:c1]


def _fstring_end(tokens: list[tokenize.TokenInfo], i: int) -> int:
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].type == _FSTRING_START:
            depth += 1
        elif tokens[j].type == _FSTRING_END:
            depth -= 1
            if depth == 0:
                return j
    raise MinifyError("unterminated f-string")


def _is_bare_string(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """A statement made only of (implicitly concatenated) string literals."""
    j = i
    while j < len(tokens) and tokens[j].type in (token.STRING, token.NL, token.COMMENT):
        j += 1
    return j < len(tokens) and tokens[j].type in (token.NEWLINE, token.ENDMARKER)


def _skip_statement(tokens: list[tokenize.TokenInfo], i: int) -> int:
    while tokens[i].type != token.NEWLINE:
        i += 1
    return i + 1


def _block_would_be_empty(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """After dropping a docstring: does its block have nothing else (next token closes it)?"""
    while i < len(tokens) and tokens[i].type in (token.NL, token.COMMENT):
        i += 1
    return i >= len(tokens) or tokens[i].type in (token.DEDENT, token.ENDMARKER)


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_" or ord(ch) > 127


def _needs_space(prev: tokenize.TokenInfo, tok: tokenize.TokenInfo) -> bool:
    left, right = prev.string[-1], tok.string[0]
    if _word_char(left) and _word_char(right):
        return True
    if prev.type == token.NUMBER and (right == "." or _word_char(right)):
        return True
    # `x = -1` style operators never merge into a different token except these pairs.
    return (prev.type == token.OP and tok.type == token.OP
            and (prev.string + tok.string)[:2] in {"**", "//", "<<", ">>", "==", "->", "<=", ">=", "!="})


def wrap(source: str) -> str:
    """The merged records' one-file self-extracting script that runs `source`: lzma (raw LZMA2) +
    base85."""
    return WRAPPER_HEAD + base64.b85encode(_compress(source)).decode("ascii") + WRAPPER_TAIL


def pack(source: str) -> bytes:
    """pgolf's one-file self-extracting script that runs `source`, as the file's bytes: raw LZMA2
    in a latin-1 string literal."""
    body = _compress(source).decode("latin-1").translate(_ESCAPES)
    return (PACKED_HEAD + body + PACKED_TAIL).encode("latin-1")


def _compress(source: str) -> bytes:
    return lzma.compress(source.encode("utf-8"), format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS)


def unwrap(text: str) -> str | None:
    """The source a script made by `wrap` or `pack` runs, or None if `text` is neither."""
    if text.startswith(WRAPPER_HEAD) and text.endswith(WRAPPER_TAIL):
        packed = base64.b85decode(text[len(WRAPPER_HEAD):-len(WRAPPER_TAIL)])
    elif text.startswith(PACKED_HEAD) and text.endswith(PACKED_TAIL):
        try:
            packed = ast.literal_eval('"' + text[len(PACKED_HEAD):-len(PACKED_TAIL)] + '"').encode("latin-1")
        except (SyntaxError, ValueError, UnicodeEncodeError):
            return None
    else:
        return None
    return lzma.decompress(packed, format=lzma.FORMAT_RAW,
                           filters=[{"id": lzma.FILTER_LZMA2}]).decode("utf-8")


def read_source(data: bytes) -> str:
    """A Python file's text, decoded as Python decodes it (UTF-8 unless it declares an encoding);
    UnicodeDecodeError or SyntaxError (a bad declaration) when Python could not read it."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding).removeprefix("\ufeff")


def compact_form(source: str) -> str:
    """The merged records' smallest self-extracting form of `source`: minified when the source
    tokenizes here.

    A source that is already a wrapper (a packaged train_gpt.py counting itself as it runs) is
    counted through its payload: wrapping base85 text again only adds bytes (35,087 -> 36,124 on
    the record bundle), so the smaller of it and the payload's own form is the count."""
    payload = unwrap(source)
    if payload is not None:
        forms = [compact_form(payload)]
        if source.startswith(WRAPPER_HEAD):  # the records' form already: as text, its length is its bytes
            forms.append(source)
        return min(forms, key=len)
    if not EXTRAS:  # a record bundle is written minified (trainer.bundle), so it ships no minifier
        return wrap(source)
    return wrap(_minified(source))


def shipped_form(source: str) -> bytes:
    """The train_gpt.py `pgolf package` ships for `source` (or for the program a wrapper runs):
    its minified text packed (`pack`)."""
    payload = unwrap(source)
    body = payload if payload is not None else source
    return pack(body if not EXTRAS else _minified(body))


def _minified(source: str) -> str:
    try:
        return minify(source)
    except MinifyError:
        return source
