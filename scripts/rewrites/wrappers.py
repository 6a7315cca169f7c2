"""Every Python file of the folder shipped as a self-extracting wrapper of itself, in the
forms records ship: raw LZMA2 + base85 (the merged records' stub), zlib + base85, raw LZMA2 in a
latin-1 string literal (pgolf's packed form), and the payload registered in `linecache` and run
through `exec(compile(...))` (records that use Triton, whose kernels' source is read back through
linecache)."""

from __future__ import annotations

import base64
import lzma
import zlib

from audits.submission import codesize


def lzma_b85(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return _each(files, lambda text: codesize.wrap(text).encode("utf-8"))


def zlib_b85(files: dict[str, bytes]) -> dict[str, bytes] | None:
    def wrap(text: str) -> bytes:
        payload = base64.b85encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
        return f'import zlib,base64\nexec(zlib.decompress(base64.b85decode("{payload}")))\n'.encode()
    return _each(files, wrap)


def packed_latin1(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return _each(files, codesize.pack)


def linecache_exec(files: dict[str, bytes]) -> dict[str, bytes] | None:
    def wrap(text: str) -> bytes:
        packed = lzma.compress(text.encode("utf-8"), format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA2}])
        payload = base64.b85encode(packed).decode("ascii")
        return ("import lzma as L,base64 as B,linecache as C\n"
                f"S=L.decompress(B.b85decode('{payload}'),format=L.FORMAT_RAW,filters=[{{'id':L.FILTER_LZMA2}}]).decode()\n"
                "F=__file__+'.__decompressed__.py'\n"
                "C.cache[F]=(len(S),None,S.splitlines(True),F)\n"
                "exec(compile(S,F,'exec'))\n").encode()
    return _each(files, wrap)


def _each(files: dict[str, bytes], wrap) -> dict[str, bytes] | None:
    """Every Python file wrapped, a wrapper too (the audit unwraps layer after layer)."""
    out = dict(files)
    for rel, data in files.items():
        if rel.endswith(".py"):
            try:
                out[rel] = wrap(codesize.read_source(data))
            except (UnicodeDecodeError, SyntaxError):
                continue
    return out if out != files else None
