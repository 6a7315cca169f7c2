"""Submission strings in the outputs: no escape sequence reaches a terminal, and no heading,
link, image, HTML or mention comes out of the Markdown (checked with a CommonMark parser)."""

from __future__ import annotations

import html
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from audits.report import neutral

COMMONMARK = MarkdownIt("commonmark").enable("table")  # raw HTML on, as GitHub renders it
# Text that goes for every construct at once, with the characters Markdown gives meaning to.
HOSTILE = st.text(st.sampled_from(list("ab #*_`[]()!<>|\\@:/.-=\n\t\x1b\x07\u202e\u200b~&;w")), max_size=60)


def tags(rendered: str) -> set[str]:
    return set(re.findall(r"</?([a-z0-9]+)", rendered))


def test_terminal_escapes_controls_and_invisible_format_characters():
    text = "a\x1b]52;c;aGk=\x07b\x1b[2J\r\x9b\u202e\u200bc\nd\te"
    assert neutral.terminal(text) == "a\\x1b]52;c;aGk=\\x07b\\x1b[2J\\x0d\\x9b\\u202e\\u200bc\nd\te"
    assert neutral.one_line("a\nb\tc") == "a\\x0ab\\x09c"
    assert neutral.terminal("plain text, ± and é") == "plain text, ± and é"


@settings(max_examples=400, deadline=None)
@given(HOSTILE)
def test_markdown_makes_nothing_but_text_code_and_emphasis(text):
    rendered = COMMONMARK.render("x " + neutral.markdown(text))
    assert tags(rendered) <= {"p", "code", "em"}, rendered
    assert "\x1b" not in rendered and "\n" not in rendered.removesuffix("\n")


def test_markdown_shows_the_text_and_keeps_its_code_spans():
    message = "the import fails with `NameError: x` at __main__ (line 3), rule TTT_SCORE_AFTER_ADAPT"
    # Unescaped, `__main__` renders as bold "main"; ids with underscores inside words stay as written.
    assert neutral.markdown(message) == message.replace("__main__", "\\_\\_main\\_\\_")
    rendered = COMMONMARK.render(neutral.markdown(message))
    assert tags(rendered) == {"p", "code"}
    assert html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip() == message.replace("`", "")
    rendered = COMMONMARK.render(neutral.markdown("# Verdict: CLEAN ![i](http://e/i.png) <b>x</b> **y**"))
    plain = html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()
    assert plain == "# Verdict: CLEAN ![i](http:\u2060//e/i.png) <b>x</b> **y**"


def test_mentions_and_bare_links_are_broken_by_an_invisible_joiner():
    assert neutral.markdown("@octocat www.evil.example https://evil.example a@b") == (
        "@\u2060octocat www\u2060.evil.example https:\u2060//evil.example a@\u2060b")


@settings(max_examples=400, deadline=None)
@given(HOSTILE)
def test_a_code_span_holds_the_whole_text(text):
    rendered = COMMONMARK.render("x " + neutral.code(text)).strip()
    spans = re.findall(r"<code>(.*?)</code>", rendered)
    assert len(spans) == 1 and tags(rendered) == {"p", "code"}, rendered
    assert html.unescape(spans[0]).strip(" ") == neutral.one_line(text).strip(" ")


@settings(max_examples=400, deadline=None)
@given(HOSTILE)
def test_a_fenced_block_holds_the_whole_text(text):
    rendered = COMMONMARK.render(neutral.fence(text) + "\n\nafter")
    match = re.fullmatch(r"<pre><code>(.*?)</code></pre>\n<p>after</p>\n", rendered, re.S)
    assert match is not None, rendered
    assert html.unescape(match.group(1)) == neutral.terminal(text) + "\n"


def test_github_annotations_carry_no_newline_or_escape():
    assert neutral.github("a\nb\r%\x1b[2J") == "a%0Ab%0D%25\\x1b[2J"
    assert neutral.github("x:y,z", prop=True) == "x%3Ay%2Cz"


def test_json_text_escapes_c1_and_format_characters_and_keeps_the_value():
    value = {"message": "a\x9b\u202e\x1b ± é"}
    encoded = neutral.json_text(json.dumps(value, indent=2, ensure_ascii=False))
    assert "\x9b" not in encoded and "\u202e" not in encoded and "±" in encoded
    assert json.loads(encoded) == value


@settings(max_examples=400, deadline=None)
@given(HOSTILE, HOSTILE)
def test_a_table_cell_stays_one_cell(plain, spanned):
    """Pipes, in text or in a code span, after any run of backslashes, never split the row."""
    row = f"| {neutral.cell(plain)} | {neutral.code_cell(spanned)} | end |"
    tokens = COMMONMARK.parse(f"| a | b | c |\n|---|---|---|\n{row}\n")
    cells = [t for t in tokens if t.type == "td_open"]
    assert len(cells) == 3 and [t for t in tokens if t.type == "inline"][-1].content == "end", row
