"""Strings that came from a submission (messages quoting its code or its exceptions, file and
folder names, log lines) made inert in every output.

- terminal: control characters (ESC, CR, BEL, DEL, C1), and the invisible format characters that
  reorder or hide text (bidi overrides, zero-widths), are written as `\\xNN` / `\\uNNNN`; so no
  escape sequence reaches a terminal or a CI log (no screen clear, no OSC 52 clipboard write).
- markdown: one line (newlines escaped too), with what could make a heading, bold text, an
  image, a link, HTML, a table or an @-mention escaped outside the text's own `code spans`,
  which stay as they are.
- code and fence: an inline code span and a fenced block that the text cannot close.
- github: a workflow command's message or property.
- json_text: the encoder escapes C0 controls itself; the C1 and format characters it writes as
  they are become `\\uNNNN` too (the same JSON value).
"""

from __future__ import annotations

import re
import unicodedata

_WORD_JOINER = "\u2060"  # invisible; breaks a mention or a bare link without changing the text


def _escape_char(ch: str, keep: str) -> str:
    if ch in keep:
        return ch
    code = ord(ch)
    if code < 0x20 or 0x7F <= code < 0xA0:
        return f"\\x{code:02x}"
    if unicodedata.category(ch) == "Cf":
        return f"\\u{code:04x}"
    return ch


def terminal(text: str, keep: str = "\n\t") -> str:
    """`text` with every control and format character but those in `keep` escaped."""
    return "".join(_escape_char(ch, keep) for ch in text)


def one_line(text: str) -> str:
    return terminal(text, keep="")


_SPECIAL = re.compile(r"[\\\[\]<>#|!*]")
# An underscore between two letters or digits opens and closes nothing (rule ids keep theirs
# unescaped); any other may make emphasis or bold text (`__:__`).
_EDGE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_LINKISH = re.compile(r"@(?=\w)|(?<=\w):(?=//)|(?i:\bwww)(?=\.)")
_BACKTICKS = re.compile(r"`+")
_TABLE_PIPE = re.compile(r"(?<!\\)((?:\\\\)*)\|")


def markdown(text: str) -> str:
    """Inline Markdown that shows `text` as it is and makes nothing of its own."""
    text = one_line(text)
    out, pos = [], 0
    while (opening := _BACKTICKS.search(text, pos)) is not None:
        # A code span runs to the next run of exactly as many backticks; inside it nothing is
        # interpreted, so it is kept. A run that nothing closes is a literal backtick.
        closing = re.compile(f"(?<!`){opening.group()}(?!`)").search(text, opening.end())
        out.append(_plain(text[pos:opening.start()]))
        if closing is None:
            out.append("\\`" * len(opening.group()))
            pos = opening.end()
        else:
            out.append(text[opening.start():closing.end()])
            pos = closing.end()
    out.append(_plain(text[pos:]))
    return "".join(out)


def cell(text: str) -> str:
    """`markdown(text)` for a GFM table cell."""
    return _table_safe(markdown(text))


def code_cell(text: str) -> str:
    """`code(text)` for a GFM table cell."""
    return _table_safe(code(text))


def _table_safe(rendered: str) -> str:
    """A GFM table splits its row at every pipe that no backslash escapes, inside a code span
    too, and shows an escaped one as a pipe in both: each pipe after an even run of backslashes
    gets one."""
    return _TABLE_PIPE.sub(lambda m: m.group(1) + "\\|", rendered)


def _plain(text: str) -> str:
    text = _SPECIAL.sub(lambda m: "\\" + m.group(), text)
    text = _EDGE_UNDERSCORE.sub(r"\\_", text)
    return _LINKISH.sub(lambda m: m.group() + _WORD_JOINER, text)


def code(text: str) -> str:
    """An inline code span holding `text` on one line."""
    text = one_line(text)
    ticks = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    # CommonMark strips one space from each end of a span: padded, the text's own ends stay.
    pad = " " if not text or text[0] in "` " or text[-1] in "` " else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str) -> str:
    """A fenced block holding `text`: the fence is longer than any backtick run in it."""
    text = terminal(text)
    ticks = "`" * max(3, max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    return f"{ticks}\n{text}\n{ticks}"


def json_text(encoded: str) -> str:
    """Encoded JSON with the C1 and format characters its strings hold escaped."""
    return "".join(f"\\u{ord(ch):04x}" if ord(ch) >= 0x7F and _escape_char(ch, "") != ch else ch
                   for ch in encoded)


def github(text: str, prop: bool = False) -> str:
    """A workflow command's message (or, with `prop`, a property value)."""
    text = terminal(text, keep="\n\r").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text
