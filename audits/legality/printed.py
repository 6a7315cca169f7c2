"""Lines a script prints, and the settings it prints them under: a log line that only code behind
`if args.ngram_eval:` prints shows that the run had NGRAM_EVAL on, whatever its launch command or
hyperparameters say (many logs print neither).

The walk notes each call of a print or logging function whose message is a string (`print`,
`log0`, `logger.info`, a log file's `write`) as a pattern of its literal text, with the settings
tests the call runs under. A log line matched by patterns speaks for the settings every one of
them runs under: a message also printed outside the test proves nothing.
"""

from __future__ import annotations

import functools
import re

import libcst as cst

_PRINTER = re.compile(r"print|log|info|warn|write", re.I)
_PRINTER_OWNER = re.compile(r"print|log|stdout", re.I)
# flags, then a width that starts past them (a zero is a flag): `(?:\d+)` after `[-#0 +]*`
# split a run of zeros every way, cubic in a long one
_PERCENT = re.compile(r"%[-#0 +]*(?:[1-9]\d*|\*)?(?:\.\d+)?[sdifgeExXrc]")
_BRACES = re.compile(r"\{[^{}]*\}")
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "t": "\t"}
_HOLE = None  # a formatted value in the message's parts
# A pattern says little unless its literal text does: 10 characters with a word in them
_MIN_LITERAL = 10
_WORD = re.compile(r"[A-Za-z_]{4,}")


_MESSAGES = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.BinaryOperation, cst.Call)


def pattern(call: cst.Call, code) -> tuple[tuple, str] | None:
    """(the pieces of the first line of this call's message: its literal texts, with `_HOLE`
    where a value is printed; its longest literal piece) when the call prints (its function is
    named so, its first argument is a string) and its literal text is telling."""
    # every call of the walk comes here: the cheap tests first, the function's name last
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    if not isinstance(call.args[0].value, _MESSAGES) or not isinstance(call.func, (cst.Name, cst.Attribute)):
        return None
    name = code(call.func)
    last = name.rsplit(".", 1)[-1]
    if not _PRINTER.search(last) or not _PRINTER_OWNER.search(name):
        return None
    parts = _parts(call.args[0].value)
    if parts is None:
        return None
    parts = _first_line(parts)
    literal = "".join(p for p in parts if p is not _HOLE)
    if len(literal.strip()) < _MIN_LITERAL or not _WORD.search(literal) or "{" in literal or "}" in literal:
        return None  # a brace in the text: a value printed beside it could hold one too
    pieces: list = []  # literal texts run together, one hole between them at most
    for part in parts:
        if part is _HOLE and (not pieces or pieces[-1] is not _HOLE):
            pieces.append(_HOLE)
        elif part is not _HOLE and part:
            if pieces and pieces[-1] is not _HOLE:
                pieces[-1] += part
            else:
                pieces.append(part)
    return tuple(pieces), max((p for p in parts if p is not _HOLE), key=len)


def matches(pieces: tuple, line: str) -> bool:
    """Whether `line` ends with what the message prints (trailing spaces aside), starting at the
    line's start or after a character that is no quote or word character (a message in source
    code is a string); a value printed in a hole holds no brace, so source code never matches.

    A few `str.find` per piece: no brace can be inside a match, so it lies after the line's last
    brace, where a hole takes anything and each literal piece is best put at its first place
    after the one before, the last at the line's end. The pattern with a lazy gap per hole that
    this replaces backtracked through every placement: exponential in the number of holes."""
    start = max(line.rfind("{"), line.rfind("}")) + 1
    literals = [p for p in pieces if p is not _HOLE]
    if not literals:
        return False
    limit = len(line)
    if pieces[-1] is not _HOLE:  # the last piece ends the line, but for spaces: its last place
        last = literals.pop()
        limit = line.rfind(last, start)
        if limit < 0 or limit + len(last) < len(line.rstrip()):
            return False
    if pieces[0] is _HOLE:  # a match may start anywhere before the first piece
        at = next((k for k in range(start, limit + 1) if _may_start(line, k)), -1)
    elif literals:
        at = line.find(literals[0], start, limit)
        while at >= 0 and not _may_start(line, at):
            at = line.find(literals[0], at + 1, limit)
        at, literals = (at + len(literals[0]) if at >= 0 else at), literals[1:]
    else:
        at = limit if _may_start(line, limit) else -1
    for literal in literals:
        if at < 0:
            break
        at = line.find(literal, at, limit)
        at = at + len(literal) if at >= 0 else at
    return at >= 0


def _may_start(line: str, at: int) -> bool:
    return at == 0 or line[at - 1] not in "\"'" and not (line[at - 1].isalnum() or line[at - 1] == "_")


def _parts(node: cst.BaseExpression) -> list | None:
    """The message as literal strings and holes, or None where it is not a string."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return [value] if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = _parts(node.left), _parts(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, cst.FormattedString):
        raw = "r" in node.prefix.lower()
        return [(p.value if raw else _unescape(p.value)) if isinstance(p, cst.FormattedStringText) else _HOLE
                for p in node.parts]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        left = _parts(node.left)
        return _split(left, _PERCENT) if left is not None else None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value == "format":
        base = _parts(node.func.value)
        return _split(base, _BRACES) if base is not None else None
    return None


def _unescape(text: str) -> str:
    """An f-string's text as printed (libcst keeps it as written): the escapes a message uses."""
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def _split(parts: list, holes: re.Pattern) -> list:
    out = []
    for part in parts:
        if part is _HOLE:
            out.append(part)
            continue
        pieces = holes.split(part)
        for i, piece in enumerate(pieces):
            if i:
                out.append(_HOLE)
            out.append(piece)
    return out


def _first_line(parts: list) -> list:
    out = []
    for part in parts:
        if part is not _HOLE and "\n" in part:
            out.append(part.split("\n", 1)[0])
            break
        out.append(part)
    return out


def turned_on(prints, logs) -> dict[str, str]:
    """Setting name -> the log line that shows it on: a line only prints behind `if NAME:` write.
    `prints`: (pattern, its longest literal, flags) of every print the analysis found, flags the
    settings tests it runs under (`if:NAME:1:0`); `logs`: the folder's logs."""
    return dict(_turned_on(prints, tuple((log.rel, log.text, _source_lines(log.parsed)) for log in logs)))


@functools.lru_cache(maxsize=4)
def _turned_on(prints, logs) -> tuple:
    """turned_on's items, once per folder: every legality rule asks (a scan of each log line)."""
    found: dict[str, str] = {}
    for rel, text, skip in logs:
        for number, line in enumerate(text.splitlines(), 1):
            if number in skip or len(line) > 2000:
                continue
            common = None
            for pieces, anchor, flags in prints:
                if anchor in line and matches(pieces, line):
                    common = flags if common is None else common & flags
                    if not common:
                        break
            for flag in sorted(common or ()):
                _, name, need, default = flag.split(":")
                if need == "1" and default == "0":
                    found.setdefault(name, f"{rel}:{number} ({line.strip()[:120]})")
    return tuple(found.items())


def _source_lines(parsed) -> range:
    """The lines of the script's own source that a log carries at its top."""
    block = parsed.embedded_source
    if block is None or block.open_ended is not None:
        return range(0)
    return range(block.line, block.line + block.lines)
