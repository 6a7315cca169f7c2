"""Static unwrapping: every wrapper shape, nesting, sibling stubs, and payloads that must not be
expanded. Wrappers are built here with the real compressors; nothing is executed."""

from __future__ import annotations

import base64
import binascii
import bz2
import gzip
import lzma
import time
import zlib

import brotli
import pytest

from audits.submission import codesize
from audits.submission import unwrap

CODE = "import os\n\n\ndef log(s):\n    print(s)\n\n\nlog(f\"{', '.join(os.listdir())}\")\n"


def _no_files(name: str) -> bytes:
    raise unwrap.Unreadable(f"no file {name}")


def _lines(literal: str, width: int = 60) -> str:
    """A payload as adjacent string literals, one per line (records split them so)."""
    return '"' + '"\n"'.join(literal[i:i + width] for i in range(0, len(literal), width)) + '"'


SHAPES = {
    "raw lzma + base85, one literal": (codesize.wrap(CODE), "raw lzma + base85"),
    "xz + base85, adjacent literals on many lines, size sentinel": (
        "import lzma as L,base64 as B\n__wrapper_size__=21392\nexec(L.decompress(B.b85decode("
        + _lines(base64.b85encode(lzma.compress(CODE.encode())).decode()) + ")))\n", "lzma + base85"),
    "xz container, adjacent literals on one line": (
        'import lzma as L,base64 as B\nexec(L.decompress(B.b85decode("'
        + '" "'.join(base64.b85encode(lzma.compress(CODE.encode(), format=lzma.FORMAT_XZ)).decode()[i:i + 40]
                     for i in range(0, 400, 40)) + '" "'
        + base64.b85encode(lzma.compress(CODE.encode(), format=lzma.FORMAT_XZ)).decode()[400:]
        + '"),format=L.FORMAT_XZ))\n', "xz + base85"),
    "brotli + base85": ("import brotli as B,base64 as A\nexec(B.decompress(A.b85decode(%r)))\n"
                        % base64.b85encode(brotli.compress(CODE.encode())).decode(), "brotli + base85"),
    "zlib + base64, decoded to text": ("import zlib, base64\n"
                                      "exec(zlib.decompress(base64.b64decode(%r)).decode('utf-8'))\n"
                                      % base64.b64encode(zlib.compress(CODE.encode())).decode(), "zlib + base64"),
    "raw deflate, wbits from a negative literal": (
        "import zlib\nfrom base64 import b64decode as d\nexec(zlib.decompress(d(%r), -15))\n"
        % base64.b64encode(zlib.compress(CODE.encode())[2:-4]).decode(), "zlib + base64"),
    "gzip + base64": ("import gzip, base64\nexec(gzip.decompress(base64.b64decode(%r)))\n"
                      % base64.b64encode(gzip.compress(CODE.encode())).decode(), "gzip + base64"),
    "bz2 + ascii85": ("import bz2, base64\nexec(bz2.decompress(base64.a85decode(%r)))\n"
                      % base64.a85encode(bz2.compress(CODE.encode())).decode(), "bz2 + ascii85"),
    "lzma + hex via bytes.fromhex": ("import lzma\nexec(lzma.decompress(bytes.fromhex(%r)))\n"
                                     % lzma.compress(CODE.encode()).hex(), "lzma + hex"),
    "zlib + hex via binascii, compile()": (
        "import zlib, binascii\nexec(compile(zlib.decompress(binascii.unhexlify(%r)), 'x', 'exec'))\n"
        % zlib.compress(CODE.encode()).hex(), "zlib + hex"),
    "__import__ and str(..., 'utf-8')": (
        "exec(str(__import__('zlib').decompress(__import__('base64').b32decode(%r)), 'utf-8'))\n"
        % base64.b32encode(zlib.compress(CODE.encode())).decode(), "zlib + base32"),
    "from-imports and a named payload": (
        "from lzma import decompress\nfrom base64 import b85decode\n"
        "PAYLOAD = %r\nexec(decompress(b85decode(PAYLOAD)))\n"
        % base64.b85encode(lzma.compress(CODE.encode())).decode(), "lzma + base85"),
    "a triple-quoted payload with its newlines replaced away": (
        'import lzma,base64\n_b=b"""\n' + _lines(base64.b85encode(lzma.compress(CODE.encode())).decode())
        .replace('"', "") + '\n"""\nexec(lzma.decompress(base64.b85decode(_b.replace(b"\\n",b""))).decode("utf-8"))\n',
        "lzma + base85"),
    "a plain string": ("exec(%r)\n" % CODE, ""),
    "pgolf's packed form: raw lzma in a latin-1 literal": (codesize.read_source(codesize.pack(CODE)), "raw lzma"),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_wrapper_shape_unwraps_to_the_code(name):
    text, steps = SHAPES[name]
    result = unwrap.unwrap(text, "train_gpt.py", _no_files)
    assert result.error is None and result.source == CODE
    [layer] = result.layers
    exec_line = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("exec("))
    assert (layer.file, layer.line, " + ".join(layer.steps)) == ("train_gpt.py", exec_line, steps)


def test_zstd_when_installed():
    zstandard = pytest.importorskip("zstandard")
    text = "import zstandard, base64\nexec(zstandard.ZstdDecompressor().decompress(base64.b85decode(%r)))\n" \
        % base64.b85encode(zstandard.ZstdCompressor().compress(CODE.encode())).decode()
    result = unwrap.unwrap(text, "train_gpt.py", _no_files)
    assert result.source == CODE and result.note == "train_gpt.py:2 (zstd + base85)"


def test_nested_wrappers_name_every_layer():
    inner = codesize.wrap(CODE)
    outer = "import zlib, base64\n\nexec(zlib.decompress(base64.b64decode(%r)))\n" \
        % base64.b64encode(zlib.compress(inner.encode())).decode()
    result = unwrap.unwrap(outer, "train_gpt.py", _no_files)
    assert result.source == CODE
    assert result.note == "train_gpt.py:3 (zlib + base64), then line 2 of that payload (raw lzma + base85)"


@pytest.mark.parametrize("stub", [
    'exec(open(__file__.replace("train_gpt.py","train_gpt_decode.py")).read())\n',
    "import os\nexec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'train_gpt_decode.py')).read())\n",
    "from pathlib import Path\nexec(Path(__file__).with_name('train_gpt_decode.py').read_text())\n",
    "import pathlib\nexec((pathlib.Path(__file__).resolve().parent / 'train_gpt_decode.py').read_text())\n",
])
def test_a_stub_that_runs_a_sibling_file(stub):
    asked = []

    def read(name: str) -> bytes:
        asked.append(name)
        return codesize.wrap(CODE).encode()

    result = unwrap.unwrap(stub, "train_gpt.py", read)
    assert asked == ["train_gpt_decode.py"]
    assert result.source == CODE
    assert result.note.endswith("(runs train_gpt_decode.py), then train_gpt_decode.py:2 (raw lzma + base85)")


def test_plain_scripts_are_not_wrappers():
    assert unwrap.unwrap(CODE, "train_gpt.py", _no_files) is None
    code = "import lzma\n\ndef main():\n    exec(lzma.decompress(blob))\n\nmain()\n"
    assert unwrap.unwrap(code, "train_gpt.py", _no_files) is None
    mixed = "import zlib\nx = compute()\nexec(zlib.decompress(x))\n"
    assert unwrap.unwrap(mixed, "train_gpt.py", _no_files) is None



def test_a_wrapper_that_names_its_payload_and_keeps_records_beside_the_exec():
    """`_src = lzma.decompress(...).decode()` then `exec(compile(_src, ...))`, with settings and
    the module's traceback records set before it: still a wrapper."""
    payload = base64.b85encode(lzma.compress(CODE.encode())).decode()
    text = ("import os\nimport base64, lzma, linecache\n"
            "os.environ.setdefault('PREQUANT_TTT_LR', '1e-3')\n"
            "globals()['__file__'] = 'train_gpt.py'\n"
            f"_src = lzma.decompress(base64.b85decode({payload!r})).decode()\n"
            "linecache.cache['train_gpt.py'] = (len(_src), None, _src.splitlines(True), 'train_gpt.py')\n"
            "exec(compile(_src, 'train_gpt.py', 'exec'))\n")
    result = unwrap.unwrap(text, "train_gpt.py", _no_files)
    assert result.source == CODE and result.note == "train_gpt.py:7 (lzma + base85)"
    # a name bound to anything but a decoder is computation: real code
    assert unwrap.unwrap(text.replace("_src = lzma.decompress(", "_src = fetch(lzma.decompress("
                                      ).replace(".decode()\n", ".decode())\n"), "train_gpt.py", _no_files) is None

def test_a_wrapper_that_registers_its_payload_in_linecache_under_a_file_name_of_its_own():
    """The form records that use Triton ship (Triton reads kernels' source through linecache):
    the payload and a file name bound to names, the payload put in `linecache.cache` under an
    aliased import, then `exec(compile(S, F, "exec"))`."""
    payload = base64.b85encode(lzma.compress(CODE.encode(), format=lzma.FORMAT_RAW,
                                             filters=[{"id": lzma.FILTER_LZMA2}])).decode()
    text = ("import lzma as L,base64 as B,linecache as C\n"
            f"S=L.decompress(B.b85decode({payload!r}),format=L.FORMAT_RAW,filters=[{{'id':L.FILTER_LZMA2}}]).decode()\n"
            "F=__file__+'.__decompressed__.py'\n"
            "C.cache[F]=(len(S),None,S.splitlines(True),F)\n"
            "exec(compile(S,F,'exec'))\n")
    result = unwrap.unwrap(text, "train_gpt.py", _no_files)
    assert result.error is None and result.source == CODE
    assert result.note == "train_gpt.py:5 (raw lzma + base85)"
    # the records' assignment is to linecache's own cache only: any other subscript is code
    other = text.replace("C.cache[F]", "D.cache[F]")
    assert unwrap.unwrap(other, "train_gpt.py", _no_files) is None


def test_a_byte_order_mark_at_the_head_of_a_payload_is_read_as_python_reads_it():
    """`exec` of bytes decodes them as a source file: a UTF-8 BOM is dropped, a declared encoding
    used."""
    for head, code in ((b"\xef\xbb\xbf", CODE), (b"# -*- coding: latin-1 -*-\n", "# -*- coding: latin-1 -*-\n" + CODE)):
        data = head + CODE.encode()
        text = "import zlib,base64\nexec(zlib.decompress(base64.b85decode(%r)))\n" % (
            base64.b85encode(zlib.compress(data)).decode())
        result = unwrap.unwrap(text, "train_gpt.py", _no_files)
        assert result.error is None and result.source == code


def _error(text: str, read=_no_files) -> str:
    result = unwrap.unwrap(text, "train_gpt.py", read)
    assert result is not None and result.source is None and result.error_line is not None
    return result.error


def test_corrupt_and_truncated_payloads_are_errors():
    good = codesize.wrap(CODE)
    start = good.index('("') + 2
    assert "truncated" in _error(good[:start + 40] + good[good.index('")'):])
    assert "corrupt" in _error(good[:start] + "~~~~~" + good[start + 5:])  # '~' is not base85
    broken = lzma.compress(CODE.encode())
    broken = broken[:30] + bytes(b ^ 0xFF for b in broken[30:60]) + broken[60:]
    assert "lzma" in _error("import lzma,base64\nexec(lzma.decompress(base64.b85decode(%r)))\n"
                            % base64.b85encode(broken).decode())
    assert "not UTF-8" in _error("import zlib\nexec(zlib.decompress(%r))\n" % zlib.compress(b"\xff\xfe code"))


@pytest.mark.parametrize("compress,name", [
    (lambda b: lzma.compress(b), "lzma"), (lambda b: zlib.compress(b, 9), "zlib"),
    (lambda b: bz2.compress(b), "bz2"), (lambda b: brotli.compress(b), "brotli"),
    (lambda b: gzip.compress(b), "gzip"),
])
def test_a_decompression_bomb_is_refused_within_the_bound(compress, name):
    bomb = compress(b"#" * 40_000_000)
    text = f"import {name}, base64\nexec({name}.decompress(base64.b85decode(%r)))\n" % base64.b85encode(bomb).decode()
    started = time.perf_counter()
    result = unwrap.unwrap(text, "train_gpt.py", _no_files, limit=4_000_000)
    assert "decompresses to more than 4,000,000 bytes" in result.error
    assert time.perf_counter() - started < 60, "a hang, not a slow machine"


def test_code_pgolf_will_not_run_is_an_error():
    assert "cannot evaluate" in _error("import zlib\nexec(zlib.decompress(fetch('http://x')))\n")
    assert "cannot evaluate" in _error("exec(''.join(reversed(')1(tnirp')))\n")
    assert "2 exec calls" in _error("exec('a = 1')\nexec('b = 2')\n")


@pytest.mark.parametrize("stub", [
    "exec(open('/etc/passwd').read())\n",
    'exec(open(__file__.replace("train_gpt.py", "../../other/train_gpt.py")).read())\n',
])
def test_reads_outside_the_folder_are_refused_by_the_reader(stub):
    from audits.submission import Submission, _sibling_reader

    sub = Submission(root=__import__("pathlib").Path("/nonexistent"), name="x", track="10min_16mb",
                     track_origin="test")
    error = _error(stub, _sibling_reader(sub, "train_gpt.py"))
    assert "outside the folder" in error


def test_nesting_is_bounded():
    text = CODE
    for _ in range(unwrap.MAX_LAYERS + 1):
        text = "exec(%r)\n" % text
    assert "nested wrappers" in _error(text)


def test_base85_with_non_ascii_text_is_an_error():
    assert "non-ASCII" in _error("import base64\nexec(base64.b85decode('é'))\n")


def test_binascii_errors_are_reported():
    assert "corrupt" in _error("import binascii\nexec(binascii.unhexlify('abc'))\n")
    assert binascii  # the module the wrapper names is the real one


def test_a_replace_that_grows_the_payload_is_bounded():
    text = 'import lzma\n_b=b"' + "x" * 1000 + '"\nexec(lzma.decompress(_b.replace(b"x", b"' + "y" * 1000 + '")))\n'
    result = unwrap.unwrap(text, "train_gpt.py", _no_files, limit=100_000)
    assert result.source is None and "more than 100,000 bytes" in result.error
