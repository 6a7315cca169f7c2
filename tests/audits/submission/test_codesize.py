"""The token-level minifier keeps the program; the wrapper decodes to it."""

import ast
import base64
import lzma
import re
from pathlib import Path

import pytest

import audits
from audits.submission.codesize import (
    MinifyError, compact_form, counted_bytes, minify, read_source, shipped_form, wrap,
)

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


def test_packed_form_holds_every_byte_value_and_runs_as_the_source(tmp_path):
    """pgolf's shipped form keeps the LZMA2 stream as bytes in a latin-1 literal: every byte value
    must survive (NUL before a digit, quotes, backslashes, line ends), and the file must run."""
    import subprocess
    import sys

    import trainer.codesize as tc
    source = "import sys\nprint(sys.argv[1:])\n" + "".join(f"v{i} = {i!r}\n" for i in range(2000))
    packed = tc.pack(source)
    stream = tc._compress(source)
    assert set(stream) >= {0, ord("\n"), ord("\r"), ord('"'), ord("\\")}  # the escapes are exercised
    assert len(packed) < len(stream) * 1.03 + len(tc.PACKED_HEAD + tc.PACKED_TAIL) < len(wrap(source))
    assert tc.unwrap(read_source(packed)) == source
    script = tmp_path / "train_gpt.py"
    script.write_bytes(packed)
    done = subprocess.run([sys.executable, str(script), "a"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "['a']\n", done.stderr


def test_the_shipped_form_counts_as_itself():
    """A packaged train_gpt.py run again counts the file it is; the audit counts that file too,
    smaller than the records' form of the same payload."""
    source = "".join(f"value_{i} = {i} * {i}\n" for i in range(3000))
    shipped = shipped_form(source)
    assert shipped_form(read_source(shipped)) == shipped
    assert counted_bytes(shipped, read_source(shipped)) == len(shipped) < len(compact_form(source))
    assert compact_form(read_source(shipped)) == compact_form(source)
