"""The token-level minifier keeps the program; the wrapper decodes to it."""

import ast
import base64
import lzma
import re
from pathlib import Path

import pytest

import audits
from audits.submission.codesize import MinifyError, compact_form, counted_bytes, minify, wrap

TRICKY = '''"""Module docstring."""
import os  # comment
x = 1 if True else 2
y = 3 .real
z = x- -1
s = ("a" "b"
     'c')
def f(a, *args, **kw) -> int:
    """Doc."""
    # only a comment
    return a ** -2 // 3 if a else not"x"


class C:
    """Only a docstring."""


class D:
    "doc"
    v = f"{x!r:>{y}} {'q'}"

    def g(self):
        if self:
            pass
        elif x:
            "stray string statement"
        return [i for i in range(3) if i in"012"]
t = """keep
this"""
lam = lambda: ...
'''


def strip_docstrings(tree):
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                and isinstance(s.value.value, str))]
                setattr(node, field, kept or ([ast.Pass()] if body else []))
    return ast.dump(tree)


def same_program(a: str, b: str) -> bool:
    return strip_docstrings(ast.parse(a)) == strip_docstrings(ast.parse(b))


def test_tricky_source_keeps_its_meaning():
    out = minify(TRICKY)
    assert same_program(TRICKY, out)
    assert "comment" not in out and "Doc." not in out and "keep\nthis" in out


def test_pgolf_own_sources_keep_their_meaning():
    for path in Path(audits.__file__).parent.rglob("*.py"):
        src = path.read_text()
        assert same_program(src, minify(src)), path


def test_wrapper_decodes_statically_to_the_minified_source():
    form = compact_form(TRICKY)
    payload = re.search(r'b85decode\("([^"]+)"\)', form).group(1)
    decoded = lzma.decompress(base64.b85decode(payload), format=lzma.FORMAT_RAW,
                              filters=[{"id": lzma.FILTER_LZMA2}]).decode()
    assert decoded == minify(TRICKY)
    assert compile(form, "w.py", "exec")  # the wrapper itself is valid Python


def test_counted_bytes_is_the_smaller_form():
    big = "x = 1\n" * 5000
    assert counted_bytes(big.encode(), big) == len(compact_form(big).encode()) < len(big)
    tiny = "x=1\n"
    assert counted_bytes(tiny.encode(), tiny) == len(tiny)


def test_untokenizable_source_raises_minify_error_and_is_wrapped_raw():
    with pytest.raises(MinifyError):
        minify('x = "unterminated\n')
    assert wrap("x = (\n").startswith("import lzma")


def test_a_wrapper_counts_as_itself_not_wrapped_again():
    # The packaged train_gpt.py counts its own bytes when it runs: lzma gains nothing on base85
    # text, so wrapping the wrapper would count more bytes than the file has.
    source = "".join(f"value_{i} = {i} * {i}\n" for i in range(3000))
    wrapped = compact_form(source)
    assert compact_form(wrapped) == wrapped
    assert len(wrap(minify(wrapped))) > len(wrapped)  # what was counted before
    assert counted_bytes(wrapped.encode(), wrapped) == len(wrapped)
    padded = wrap(source)  # a wrapper of an unminified payload counts as the minified form
    assert compact_form(padded) == wrapped
