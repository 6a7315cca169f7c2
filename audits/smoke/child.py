"""The child side of the smoke import: runs inside the sandbox as `python -I -B child.py CONFIG`.

It uses only the standard library until it runs the script (it is started by path, not as part
of pgolf): read the run's nonce from its pipe and close it, drop root, copy the folder into the
sandbox area, set the resource limits, install the GPU stubs, run the script's source as a module
that is not `__main__`, then write the nonce and what happened, as JSON, to the result pipe.

The parent believes a report only when it comes through that pipe (the script cannot replace
it; files it writes are never read) with the nonce, which is in no environment, argument or file
the script can read: a script that writes a report of its own and exits cannot forge a pass. The
script runs in this process, so one that goes looking for the nonce in the harness's memory, or
that changes what the harness reports after the import, still can; the sandbox contains it.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import platform
import resource
import shutil
import signal
import sys
import time
import traceback
import types
from pathlib import Path

_DIM_NAMES = {
    "layers": ("num_layers", "n_layer", "n_layers", "NUM_LAYERS"),
    "width": ("model_dim", "n_embd", "d_model", "MODEL_DIM", "dim"),
    "vocab": ("vocab_size", "VOCAB_SIZE", "n_vocab"),
}
# The shapes of a tiny model for --smoke-forward, by the names record scripts use.
_TINY = {"num_layers": 2, "model_dim": 64, "vocab_size": 128, "num_heads": 2, "num_kv_heads": 1,
         "mlp_mult": 2, "train_seq_len": 16, "eval_seq_len": 16, "xsa_last_n": 1, "rope_dims": 16}
_TINY_TOKENS = 16


class CPUTimeLimit(BaseException):
    """Raised in the script when it has used its CPU time (a BaseException, like
    KeyboardInterrupt, so that `except Exception` in the script does not swallow it)."""


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    nonce = _read_nonce(config["nonce_fd"])
    if config["uid"] is not None:
        # Root is exempt from the process limit, and may read root-only files: run as nobody.
        os.setgroups([])
        os.setgid(config["uid"])
        os.setuid(config["uid"])
    _prepare_area(config)
    _set_limits(config["limits"])  # after the copy: the per-file limit is lower than the copy's
    stubs = _load_stubs()
    roots = stubs.install()
    result = {"python": platform.python_version(), "stubbed": list(roots)}
    sys.path.insert(0, config["folder"])  # sibling modules of the script import
    sys.argv = [config["script"]]
    pid = os.getpid()
    start = time.perf_counter()
    try:
        module = _run_script(config)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt at import are findings too
        _forked_copy_exits(pid, 1)
        result.update(ok=False, seconds=time.perf_counter() - start,
                      error=_describe(exc, stubs, roots))
    else:
        _forked_copy_exits(pid, 0)
        result.update(ok=True, seconds=time.perf_counter() - start, dims=_dims(module))
        if config["forward"]:
            result["forward"] = _forward(module)
    _report(config["result_fd"], nonce + b"\n" + json.dumps(result).encode())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no atexit handlers or thread joins of the script


def _read_nonce(fd: int) -> bytes:
    """The parent wrote the nonce and closed its end before this process started."""
    data = b""
    while chunk := os.read(fd, 256):
        data += chunk
    os.close(fd)
    return data.strip()


def _prepare_area(config: dict) -> None:
    area = Path(config["area"])
    (area / "home").mkdir()
    (area / "tmp").mkdir()
    shutil.copytree(config["src"], config["folder"], symlinks=True)
    os.chdir(config["folder"])


def _report(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)


def _set_limits(limits: dict) -> None:
    # At the soft CPU limit SIGXCPU raises CPUTimeLimit in the script, which names the cause in
    # the report; the hard limit's SIGKILL follows for a script that ignores it.
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 5))
    signal.signal(signal.SIGXCPU, _cpu_time_used)
    for name, value in (("RLIMIT_AS", limits["memory_bytes"]), ("RLIMIT_NPROC", limits["processes"]),
                        ("RLIMIT_NOFILE", limits["open_files"]), ("RLIMIT_FSIZE", limits["output_bytes"]),
                        ("RLIMIT_CORE", 0)):
        resource.setrlimit(getattr(resource, name), (value, value))


def _cpu_time_used(signum, frame):
    raise CPUTimeLimit("the CPU time limit was reached")


def _load_stubs() -> types.ModuleType:
    path = Path(__file__).with_name("stubs.py")
    spec = importlib.util.spec_from_file_location("_pgolf_stubs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _forked_copy_exits(pid: int, status: int) -> None:
    """A process the script forked runs this code too when its copy of the import ends; only the
    original reports."""
    if os.getpid() != pid:
        os._exit(status)


def _run_script(config: dict) -> types.ModuleType:
    source = Path(config["source"]).read_bytes()  # compiled as Python reads a file: its declared encoding
    code = compile(source, config["source"], "exec", dont_inherit=True)
    module = types.ModuleType(config["module"])
    module.__file__ = config["script"]
    sys.modules[config["module"]] = module  # dataclasses and pickling look modules up by name
    exec(code, module.__dict__)
    return module


def _describe(exc: BaseException, stubs: types.ModuleType, roots) -> dict:
    frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    info = {
        "type": type(exc).__name__,
        "mro": [cls.__name__ for cls in type(exc).__mro__],
        "message": str(exc)[:2000],
        "frames": frames[-40:],
        "stub": _stub_cause(exc, frames, stubs, roots),
    }
    if isinstance(exc, SyntaxError):
        info["syntax"] = {"file": exc.filename, "line": exc.lineno, "text": (exc.text or "").strip()}
    if isinstance(exc, ImportError):
        info["module"] = exc.name
    if isinstance(exc, OSError):
        info["errno"] = exc.errno
    return info


def _stub_cause(exc: BaseException, frames, stubs: types.ModuleType, roots) -> str | None:
    """The stubbed name a failure comes from, or None when no stub is involved."""
    if not stubs.touched:  # the script never reached a stub
        return None
    last = stubs.touched[-1]
    if isinstance(exc, AttributeError) and isinstance(getattr(exc, "obj", None), stubs.StubbedGPUObject):
        return f"{exc.obj._stub_name}.{exc.name}"
    if isinstance(exc, AttributeError) and getattr(getattr(exc, "obj", None), "__name__", "").split(".")[0] in roots:
        return f"{exc.obj.__name__}.{exc.name}"
    if any(f[0] == stubs.__file__ for f in frames):
        return last
    if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in roots:
        return exc.name
    message = str(exc)
    if "StubbedGPUObject" in message or "stubbed GPU-only" in message:
        return last
    # e.g. torch.library.register_fake("cutlass_evt::gemm_mul") after a stubbed
    # `import cutlass_evt_fusion`, which would have registered that op
    for root in roots:
        if root.split("_")[0] in message:
            return next((name for name in reversed(stubs.touched) if name.startswith(root)), root)
    return None


def _dims(module: types.ModuleType) -> dict:
    """Layers, width and vocabulary from class attributes (a `Hyperparameters` class, a config
    dataclass's defaults) or module constants: read, never instantiated, so nothing trains."""
    candidates = [module] + [value for value in vars(module).values()
                             if isinstance(value, type) and value.__module__ == module.__name__]
    for obj in candidates:
        dims = {}
        for key, names in _DIM_NAMES.items():
            for name in names:
                value = inspect.getattr_static(obj, name, None)
                if isinstance(value, int) and not isinstance(value, bool):
                    dims[key] = value
                    break
        if "layers" in dims and "width" in dims:
            dims["from"] = getattr(obj, "__name__", "")
            return dims
    return {}


def _forward(module: types.ModuleType) -> dict:
    """Best effort: build the script's GPT with tiny shapes and run one forward pass on CPU."""
    try:
        import torch
        model_cls = next((v for v in vars(module).values() if isinstance(v, type)
                          and issubclass(v, torch.nn.Module) and v.__name__ == "GPT"), None)
        if model_cls is None:
            return {"ok": False, "detail": "no nn.Module class named GPT"}
        hp_cls = next((v for v in vars(module).values() if isinstance(v, type)
                       and v.__name__ in ("Hyperparameters", "GPTConfig")), None)
        model = _build(model_cls, hp_cls)
        model.eval()
        tokens = torch.randint(0, _TINY["vocab_size"], (1, _TINY_TOKENS))
        with torch.no_grad():
            try:
                out = model(tokens, tokens)
            except TypeError:
                out = model(tokens)
        shape = tuple(out.shape) if hasattr(out, "shape") else type(out).__name__
        return {"ok": True, "detail": f"{model_cls.__name__} with {_tiny_text()} ran a forward pass "
                                      f"on 1x{_TINY_TOKENS} tokens; output {shape}"}
    except Exception as exc:  # best effort: any failure is reported, never raised
        return {"ok": False, "detail": f"{type(exc).__name__}: {str(exc)[:500]}"}


def _build(model_cls, hp_cls):
    params = [p for p in inspect.signature(model_cls.__init__).parameters.values()
              if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    hp = hp_cls() if hp_cls is not None else None
    if hp is not None:
        for name, value in _TINY.items():
            if hasattr(hp, name):
                setattr(hp, name, value)
    if len(params) == 1 and hp is not None:  # GPT(h) or GPT(config)
        return model_cls(hp)
    kwargs = {}
    for p in params:
        if p.name in _TINY:
            kwargs[p.name] = _TINY[p.name]
        elif hp is not None and hasattr(hp, p.name):
            kwargs[p.name] = getattr(hp, p.name)
        elif p.default is p.empty:
            raise TypeError(f"cannot guess {model_cls.__name__}'s argument {p.name!r}")
    return model_cls(**kwargs)


def _tiny_text() -> str:
    return ", ".join(f"{k}={_TINY[k]}" for k in ("num_layers", "model_dim", "vocab_size"))


if __name__ == "__main__":
    main(sys.argv[1])
