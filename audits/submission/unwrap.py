"""Static unwrapping of self-extracting scripts: the code that `exec` would run, never run.

A wrapper is a module of imports, constant assignments and one `exec(...)` statement, e.g.
`exec(L.decompress(B.b85decode("..."),format=L.FORMAT_RAW,filters=[{"id":L.FILTER_LZMA2}]))`.
Its argument is evaluated by a small interpreter that knows only literals, string concatenation
and the decoders below (resolved through the wrapper's imports and aliases): lzma (xz, alone
and raw with filters), zlib, gzip, bz2, brotli, zstd (when installed), base85, ascii85, base64,
base32, base16, hex, `.decode()`/`.encode()`, `compile()`, and reading a sibling file of the
folder (`open(__file__.replace("a.py", "b.py")).read()`). Beside the exec, a wrapper may bind its
payload or a file name to a name (`F = __file__ + ".py"`), set settings, and register the payload
in `linecache` for tracebacks (as records that use Triton do). Payloads that are wrappers again are
unwrapped in turn. Every decompression is bounded; a payload over the bound, or one that is
corrupt or truncated, is reported, not expanded.
"""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import dataclasses
import io
import lzma
import posixpath
import tokenize
import zlib
from collections.abc import Callable

from audits.submission import trees
from trainer.challenge import CAP_BYTES

LIMIT = CAP_BYTES  # bytes a payload may decompress to: no larger one could ship
MAX_LAYERS = 8
_LZMA_CONSTANTS = ("FORMAT_", "FILTER_", "PRESET_", "CHECK_", "MF_", "MODE_")


class Unreadable(Exception):
    """The wrapper cannot be decoded statically: the message says why, in one line."""


@dataclasses.dataclass(frozen=True)
class Layer:
    """One `exec` on the way to the code: in `file` (a path in the folder, or "" for the payload
    of the layer before), at `line`, through `steps` (outermost first, e.g. lzma, base85)."""

    file: str
    line: int
    steps: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Unwrapped:
    source: str | None  # the code that runs; None when it could not be read
    layers: tuple[Layer, ...]
    error: str | None = None
    error_line: int | None = None  # line of the failing `exec` in the shipped file

    @property
    def note(self) -> str:
        """Where the code came from, e.g. "train_gpt.py:2 (lzma + base85)"."""
        parts = []
        for layer in self.layers:
            steps = f" ({' + '.join(layer.steps)})" if layer.steps else ""
            parts.append(f"{layer.file}:{layer.line}{steps}" if layer.file
                         else f"line {layer.line} of that payload{steps}")
        return ", then ".join(parts)


ReadSibling = Callable[[str], bytes]  # a folder-relative path -> its bytes; raises Unreadable


def unwrap(text: str, rel: str, read_sibling: ReadSibling, limit: int = LIMIT) -> Unwrapped | None:
    """The code a self-extracting `text` (the file `rel`) runs, or None when it is no wrapper."""
    try:
        exec_call = _exec_call(text)
    except Unreadable as exc:
        return Unwrapped(None, (), str(exc), 1)
    if exec_call is None:
        return None
    layers: list[Layer] = []
    current, where, call = text, rel, exec_call
    try:
        while call is not None:
            if len(layers) == MAX_LAYERS:
                raise Unreadable(f"more than {MAX_LAYERS} nested wrappers")
            node, env = call
            interp = _Interpreter(env, rel, read_sibling, limit)  # exec keeps the outer __file__
            value = interp.evaluate(node.args[0])
            steps = tuple(reversed(interp.steps))  # evaluated inside out; shown outside in
            layers.append(Layer(where, node.lineno, steps))
            # A plain read of a sibling runs that file: its lines are the sibling's own.
            where = interp.sibling if interp.sibling is not None and len(steps) == 1 else ""
            current = _as_text(value)
            call = _exec_call(current)
    except Unreadable as exc:
        message = str(exc)
        if layers:  # a layer was decoded; the failure is in its payload
            message = f"{message} (in the payload of {Unwrapped(None, tuple(layers)).note})"
        return Unwrapped(None, tuple(layers), message, exec_call[0].lineno)
    return Unwrapped(current, tuple(layers))


def _as_text(value: bytes | str) -> str:
    """The text `exec` runs: bytes are read as Python reads a source file (a UTF-8 byte order
    mark or an encoding declaration decides), text as it is."""
    if isinstance(value, str):
        return value
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(value).readline)
    except SyntaxError:
        encoding = "utf-8"  # no readable declaration: decoding says what is wrong
    try:
        return value.decode(encoding).removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding.startswith("utf-8") else encoding
        raise Unreadable(f"the payload is not {name} text (byte {exc.start})") from None


def _exec_call(text: str) -> tuple[ast.Call, dict] | None:
    """The `exec(...)` call of a wrapper-shaped module and its bindings (constants, and a payload
    bound to a name), else None."""
    if "exec" not in text:
        return None
    try:
        tree = trees.ast_module(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    env: dict[str, object] = {}
    calls = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                name = alias.name if isinstance(stmt, ast.Import) else f"{stmt.module}.{alias.name}"
                local = alias.asname or (alias.name.split(".")[0] if isinstance(stmt, ast.Import) else alias.name)
                env[local] = _Module(name if alias.asname or isinstance(stmt, ast.ImportFrom) else local)
        elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets) \
                and isinstance(stmt.value, ast.Constant):
            for target in stmt.targets:
                env[target.id] = stmt.value.value
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and (_decodes(stmt.value, env) or _plain(stmt.value)):
            # `_src = lzma.decompress(...).decode()`, `F = __file__ + ".py"`: read only if exec reads it
            env[stmt.targets[0].id] = _Deferred(stmt.value)
        elif _bookkeeping(stmt, env):
            continue
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "exec" and stmt.value.args:
            calls.append(stmt.value)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or isinstance(stmt, ast.Pass):
            continue
        else:
            return None  # real code: not a wrapper
    if len(calls) > 1:
        raise Unreadable(f"{len(calls)} exec calls in one wrapper; pgolf unwraps one")
    return (calls[0], env) if calls else None


def _callee(node: ast.AST, env: dict) -> str | None:
    """The dotted name a call's function stands for ("lzma.decompress"), where it is one."""
    if isinstance(node, ast.Name):
        bound = env.get(node.id)
        return bound.name if isinstance(bound, _Module) else None if node.id in env else node.id
    if isinstance(node, ast.Attribute):
        base = _callee(node.value, env)
        return f"{base}.{node.attr}" if base else None
    return None


def _decodes(node: ast.AST, env: dict) -> bool:
    """A call of one of the decoders, or `.decode()` of one: what a wrapper binds its payload to."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute) and node.func.attr == "decode":
        return _decodes(node.func.value, env)
    return _callee(node.func, env) in _FUNCTIONS


def _plain(node: ast.AST) -> bool:
    """An expression of literals and names joined by operators: no call, so nothing computed."""
    if isinstance(node, (ast.Constant, ast.Name)):
        return True
    if isinstance(node, ast.BinOp):
        return _plain(node.left) and _plain(node.right)
    return isinstance(node, ast.Attribute) and _plain(node.value)


def _bookkeeping(stmt: ast.stmt, env: dict) -> bool:
    """A statement a wrapper runs beside its exec that computes nothing of the payload: a setting
    (`os.environ.setdefault(...)`, `os.environ[...] = ...`), or the module's own records
    (`globals()['__file__'] = ...`, `linecache.cache[...] = ...`, for tracebacks)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return isinstance(func, ast.Attribute) and func.attr == "setdefault" and _is_environ(func.value)
    if isinstance(stmt, ast.Assign) and stmt.targets and all(isinstance(t, ast.Subscript) for t in stmt.targets):
        return all(_is_environ(t.value) or _is_globals(t.value) or _is_line_cache(t.value, env) for t in stmt.targets)
    return False


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _is_globals(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals"


def _is_line_cache(node: ast.AST, env: dict) -> bool:
    """`linecache.cache`, through whatever name the wrapper imported linecache as."""
    return isinstance(node, ast.Attribute) and node.attr == "cache" and \
        isinstance(node.value, ast.Name) and _callee(node.value, env) == "linecache"


@dataclasses.dataclass(frozen=True)
class _Deferred:
    """A payload bound to a name, decoded when the exec call reads it."""

    node: ast.Call


@dataclasses.dataclass(frozen=True)
class _Module:
    """A name bound by an import: a dotted module or module attribute ("lzma", "base64.b85decode")."""

    name: str


def _import(interp, args, kwargs):
    if args and isinstance(args[0], str):
        return _Module(args[0])
    raise Unreadable("__import__(): the module name is not a literal")


def _zstd_decompressor(interp, args, kwargs):
    return _Module("zstandard")  # ZstdDecompressor().decompress(x) reads as zstandard.decompress(x)


class _Interpreter:
    """Evaluates the argument of `exec` with nothing but known, side-effect-free decoders."""

    def __init__(self, env: dict, rel: str, read_sibling: ReadSibling, limit: int):
        self.env = env
        self.rel = rel
        self.read_sibling = read_sibling
        self.limit = limit
        self.steps: list[str] = []
        self.sibling: str | None = None

    def evaluate(self, node: ast.AST):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes, int)):
            return node.value
        if isinstance(node, ast.Name):
            if isinstance(self.env.get(node.id), _Deferred):
                self.env[node.id] = self.evaluate(self.env[node.id].node)
            if node.id in self.env:
                return self.env[node.id]
            if node.id == "__file__":
                return _File(self.rel)
            return _Module(node.id)  # a builtin: bytes, str, open, compile, ...
        if isinstance(node, ast.BinOp):
            left, right = self.evaluate(node.left), self.evaluate(node.right)
            if isinstance(node.op, ast.Add) and type(left) is type(right) and isinstance(left, (str, bytes)):
                return left + right
            if isinstance(node.op, ast.BitOr) and isinstance(left, int) and isinstance(right, int):
                return left | right
            if isinstance(node.op, ast.Div) and isinstance(left, _File) and isinstance(right, str):
                return left.child(right)
            raise self._cannot(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self.evaluate(node.operand)
            if isinstance(value, int):
                return -value
            raise self._cannot(node)
        if isinstance(node, ast.Attribute):
            base = self.evaluate(node.value)
            if isinstance(base, _Module):
                if base.name == "lzma" and node.attr.startswith(_LZMA_CONSTANTS):
                    return getattr(lzma, node.attr, _Module(f"lzma.{node.attr}"))
                if base.name == "zlib" and node.attr == "MAX_WBITS":
                    return zlib.MAX_WBITS
                return _Module(f"{base.name}.{node.attr}")
            if isinstance(base, _File) and node.attr == "parent":
                return base.parent()
            return _Bound(base, node.attr)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.evaluate(e) for e in node.elts]
        if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
            return {self.evaluate(k): self.evaluate(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.Call):
            return self._call(node)
        raise self._cannot(node)

    def _cannot(self, node: ast.AST) -> Unreadable:
        text = ast.unparse(node)
        text = text if len(text) <= 60 else text[:57] + "..."
        return Unreadable(f"pgolf cannot evaluate `{text}` without running it")

    def _call(self, node: ast.Call):
        func = self.evaluate(node.func)
        name = func.name if isinstance(func, _Module) else None
        if name == "compile":  # its file name and mode (`__file__ + ".py"`, "exec") change no code
            return _passthrough(self, [self.evaluate(a) for a in node.args[:1]], {})
        args = [self.evaluate(a) for a in node.args]
        kwargs = {k.arg: self.evaluate(k.value) for k in node.keywords if k.arg is not None}
        if isinstance(func, _Bound):
            return self._method(func, args, kwargs, node)
        handler = _FUNCTIONS.get(name)
        if handler is None:
            raise self._cannot(node)
        return handler(self, args, kwargs)

    def _method(self, func: _Bound, args, kwargs, node):
        base, attr = func.base, func.attr
        if isinstance(base, bytes) and attr == "decode":
            try:
                return base.decode(*args[:1] or ["utf-8"])
            except (UnicodeDecodeError, LookupError) as exc:
                raise Unreadable(f"the payload does not decode as text: {exc}") from None
        if isinstance(base, str) and attr == "encode":
            try:
                return base.encode(*args[:1] or ["utf-8"])
            except (UnicodeEncodeError, LookupError) as exc:
                raise Unreadable(f"the payload does not encode: {exc}") from None
        if isinstance(base, (bytes, str)) and attr == "replace" and len(args) == 2 \
                and all(type(a) is type(base) for a in args):  # b85decode(_b.replace(b"\n", b""))
            if len(args[1]) > len(args[0]) and len(base) * len(args[1]) > self.limit:
                raise _too_big(self.limit)
            return base.replace(*args)
        if isinstance(base, _File) and attr == "replace" and len(args) == 2 and all(isinstance(a, str) for a in args):
            return base.replace(*args)
        if isinstance(base, _File) and attr == "with_name" and args and isinstance(args[0], str):
            return base.sibling(args[0])
        if isinstance(base, _File) and attr in ("resolve", "absolute"):
            return base
        if isinstance(base, _File) and attr in ("read_text", "read_bytes"):
            return self._read(base, text=attr == "read_text")
        if isinstance(base, _Opened) and attr == "read" and not args:
            return self._read(base.file, text=base.text)
        raise self._cannot(node)

    def _read(self, file: _File, text: bool):
        name = file.path
        if self.sibling is not None:
            raise Unreadable("the wrapper reads more than one file")
        self.sibling = name
        self.steps.append(f"runs {name}")
        data = self.read_sibling(name)
        return _as_text(data) if text else data

    # --- the decoders -------------------------------------------------------------------------

    def _bytes(self, value, what: str) -> bytes:
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            try:
                return value.encode("ascii")
            except UnicodeEncodeError:
                raise Unreadable(f"{what}: the text holds non-ASCII characters") from None
        raise Unreadable(f"{what}: its argument is not bytes or text")

    def decode(self, step: str, fn, args, kwargs) -> bytes:
        if not args:
            raise Unreadable(f"{step}: no argument")
        data = self._bytes(args[0], step)
        self.steps.append(step)
        try:
            return fn(data, **{k: v for k, v in kwargs.items() if k in ("validate", "altchars", "casefold")})
        except (binascii.Error, ValueError, TypeError) as exc:
            raise Unreadable(f"{step}: the payload is corrupt ({exc})") from None

    def decompress(self, step: str, fn, args, kwargs) -> bytes:
        if not args or not isinstance(args[0], bytes):
            raise Unreadable(f"{step}: its argument is not bytes")
        self.steps.append(step)
        return fn(args[0], kwargs, self.limit)


_POSITIONAL = {"lzma": ("format", "memlimit", "filters"), "zlib": ("wbits", "bufsize")}


@dataclasses.dataclass(frozen=True)
class _Bound:
    base: object
    attr: str


@dataclasses.dataclass(frozen=True)
class _File:
    """A path built from `__file__`: `path` relative to the submission folder."""

    path: str

    def replace(self, old: str, new: str) -> _File:
        return _File(self.path.replace(old, new))

    def parent(self) -> _File:
        return _File(posixpath.dirname(self.path))

    def child(self, name: str) -> _File:
        return _File(posixpath.join(self.path, name) if self.path else name)

    def sibling(self, name: str) -> _File:
        return _File(posixpath.join(posixpath.dirname(self.path), name))


@dataclasses.dataclass(frozen=True)
class _Opened:
    file: _File
    text: bool


def _open(interp: _Interpreter, args, kwargs):
    if not args or not isinstance(args[0], (_File, str)):
        raise Unreadable("open(): pgolf follows only paths built from __file__ or literals")
    mode = args[1] if len(args) > 1 else kwargs.get("mode", "r")
    file = args[0] if isinstance(args[0], _File) else _File(args[0])
    return _Opened(file, "b" not in str(mode))


def _dirname(interp, args, kwargs):
    if args and isinstance(args[0], _File):
        return args[0].parent()
    raise Unreadable("os.path.dirname(): pgolf follows only paths built from __file__")


def _join(interp, args, kwargs):
    if args and isinstance(args[0], _File) and all(isinstance(a, str) for a in args[1:]):
        out = args[0]
        for part in args[1:]:
            out = out.child(part)
        return out
    raise Unreadable("os.path.join(): pgolf follows only paths built from __file__")


def _same(interp, args, kwargs):
    if args and isinstance(args[0], (_File, str)):
        return args[0] if isinstance(args[0], _File) else _File(args[0])
    raise Unreadable("a path pgolf cannot follow")


def _text(interp, args, kwargs):
    if args and isinstance(args[0], bytes):
        return interp._method(_Bound(args[0], "decode"), args[1:2], {}, None)
    if args and isinstance(args[0], str):
        return args[0]
    raise Unreadable("str(): its argument is not text or bytes")


def _passthrough(interp, args, kwargs):
    if args and isinstance(args[0], (str, bytes)):
        return args[0]
    raise Unreadable("compile(): its argument is not text or bytes")


def _fromhex(interp, args, kwargs):
    if not args or not isinstance(args[0], str):
        raise Unreadable("bytes.fromhex(): its argument is not text")
    interp.steps.append("hex")
    try:
        return bytes.fromhex(args[0])
    except ValueError as exc:
        raise Unreadable(f"hex: the payload is corrupt ({exc})") from None


# --- bounded decompression ---------------------------------------------------------------------

def _too_big(limit: int) -> Unreadable:
    return Unreadable(f"the payload decompresses to more than {limit:,} bytes (a decompression bomb, "
                      "or not a training script)")


def _lzma(data: bytes, kwargs: dict, limit: int) -> bytes:
    fmt = kwargs.get("format", lzma.FORMAT_AUTO)
    filters = kwargs.get("filters")
    if not isinstance(fmt, int) or filters is not None and not isinstance(filters, list):
        raise Unreadable("lzma: format or filters are not constants pgolf can read")
    out = bytearray()
    while True:  # like lzma.decompress: one stream after another
        try:
            d = lzma.LZMADecompressor(format=fmt, filters=filters)
            chunk = d.decompress(data, max_length=limit + 1 - len(out))
        except (lzma.LZMAError, ValueError, TypeError) as exc:
            if out:
                break  # trailing data that is not a stream is ignored, as lzma.decompress does
            raise Unreadable(f"lzma: the payload is corrupt ({exc})") from None
        out += chunk
        if len(out) > limit:
            raise _too_big(limit)
        if not d.eof:
            raise Unreadable("lzma: the payload is truncated (no end-of-stream marker)")
        data = d.unused_data
        if not data:
            return bytes(out)
    return bytes(out)


def _zlib_like(data: bytes, wbits: int, what: str, limit: int, members: bool) -> bytes:
    out = bytearray()
    while True:
        d = zlib.decompressobj(wbits)
        try:
            out += d.decompress(data, limit + 1 - len(out))
        except zlib.error as exc:
            raise Unreadable(f"{what}: the payload is corrupt ({exc})") from None
        if len(out) > limit:
            raise _too_big(limit)
        if not d.eof:
            raise Unreadable(f"{what}: the payload is truncated")
        data = d.unused_data
        if not members or not data:
            return bytes(out)
        if not data.startswith(b"\x1f\x8b"):
            raise Unreadable(f"{what}: data after the last member is not gzip")


def _zlib(data: bytes, kwargs: dict, limit: int) -> bytes:
    wbits = kwargs.get("wbits", zlib.MAX_WBITS)
    if not isinstance(wbits, int):
        raise Unreadable("zlib: wbits is not a constant pgolf can read")
    return _zlib_like(data, wbits, "zlib", limit, members=False)


def _gzip(data: bytes, kwargs: dict, limit: int) -> bytes:
    return _zlib_like(data, 31, "gzip", limit, members=True)


def _bz2(data: bytes, kwargs: dict, limit: int) -> bytes:
    out = bytearray()
    while data:
        d = bz2.BZ2Decompressor()
        try:
            out += d.decompress(data, max_length=limit + 1 - len(out))
        except (OSError, ValueError) as exc:
            raise Unreadable(f"bz2: the payload is corrupt ({exc})") from None
        if len(out) > limit:
            raise _too_big(limit)
        if not d.eof:
            raise Unreadable("bz2: the payload is truncated")
        data = d.unused_data
    return bytes(out)


def _brotli(data: bytes, kwargs: dict, limit: int) -> bytes:
    try:
        import brotli
    except ImportError:
        raise Unreadable("brotli: the brotli module is not installed here") from None
    d = brotli.Decompressor()
    out = bytearray()
    try:
        out += d.process(data, output_buffer_limit=limit + 1)
        while not d.is_finished() and len(out) <= limit and not d.can_accept_more_data():
            out += d.process(b"", output_buffer_limit=limit + 1 - len(out))
    except TypeError:
        raise Unreadable("brotli: this brotli cannot bound its output; install brotli>=1.2") from None
    except brotli.error as exc:
        raise Unreadable(f"brotli: the payload is corrupt ({exc})") from None
    if len(out) > limit:
        raise _too_big(limit)
    if not d.is_finished():
        raise Unreadable("brotli: the payload is truncated")
    return bytes(out)


def _zstd(data: bytes, kwargs: dict, limit: int) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise Unreadable("zstd: the zstandard module is not installed here") from None
    try:
        declared = zstandard.frame_content_size(data)
        if declared > limit:
            raise _too_big(limit)
        out = zstandard.ZstdDecompressor().decompress(data, max_output_size=limit + 1)
    except zstandard.ZstdError as exc:
        raise Unreadable(f"zstd: the payload is corrupt or truncated ({exc})") from None
    if len(out) > limit:
        raise _too_big(limit)
    return out


def _decoder(step: str, fn):
    return lambda interp, args, kwargs: interp.decode(step, fn, args, kwargs)


def _decompressor(step: str, fn):
    def handler(interp, args, kwargs):
        kwargs = {**dict(zip(_POSITIONAL.get(step, ()), args[1:])), **kwargs}
        if step == "lzma":
            fmt = kwargs.get("format", lzma.FORMAT_AUTO)
            named = {lzma.FORMAT_RAW: "raw lzma", lzma.FORMAT_XZ: "xz", lzma.FORMAT_ALONE: "lzma-alone"}
            return interp.decompress(named.get(fmt, "lzma"), fn, args, kwargs)
        return interp.decompress(step, fn, args, kwargs)
    return handler


_FUNCTIONS: dict[str | None, Callable] = {
    "lzma.decompress": _decompressor("lzma", _lzma),
    "zlib.decompress": _decompressor("zlib", _zlib),
    "gzip.decompress": _decompressor("gzip", _gzip),
    "bz2.decompress": _decompressor("bz2", _bz2),
    "brotli.decompress": _decompressor("brotli", _brotli),
    "zstandard.decompress": _decompressor("zstd", _zstd),
    "zstd.decompress": _decompressor("zstd", _zstd),
    "compression.zstd.decompress": _decompressor("zstd", _zstd),
    "base64.b85decode": _decoder("base85", base64.b85decode),
    "base64.a85decode": _decoder("ascii85", base64.a85decode),
    "base64.b64decode": _decoder("base64", base64.b64decode),
    "base64.standard_b64decode": _decoder("base64", base64.standard_b64decode),
    "base64.urlsafe_b64decode": _decoder("base64", base64.urlsafe_b64decode),
    "base64.decodebytes": _decoder("base64", base64.decodebytes),
    "base64.b32decode": _decoder("base32", base64.b32decode),
    "base64.b16decode": _decoder("base16", base64.b16decode),
    "binascii.a2b_base64": _decoder("base64", binascii.a2b_base64),
    "binascii.unhexlify": _decoder("hex", binascii.unhexlify),
    "binascii.a2b_hex": _decoder("hex", binascii.a2b_hex),
    "bytes.fromhex": _fromhex,
    "__import__": _import,
    "zstandard.ZstdDecompressor": _zstd_decompressor,
    "str": _text,
    "compile": _passthrough,
    "open": _open,
    "io.open": _open,
    "pathlib.Path": _same,
    "Path": _same,
    "os.path.dirname": _dirname,
    "os.path.abspath": _same,
    "os.path.realpath": _same,
    "os.path.join": _join,
}
