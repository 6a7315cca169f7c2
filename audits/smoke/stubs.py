"""Stand-ins for GPU-only modules, installed inside the smoke sandbox before the script runs.

Runs in the child process and uses only the standard library (it is loaded by path, not as part
of pgolf). A stubbed package answers every attribute with a `StubbedGPUObject` (PEP 562 module
`__getattr__`), and a meta-path finder serves every dotted submodule under it, so
`from flash_attn_interface import flash_attn_varlen_func` and
`from triton.tools.tensor_descriptor import TensorDescriptor` both import. A stub object is
callable, and used as a decorator it returns the decorated function unchanged, so `@triton.jit`
and `@triton.autotune(configs=[...], key=[...])` at module level work. A name spelt like a class
(`JITFunction`, `Config`) is a class, so that `isinstance` checks against it work: torch's own
modules make them against triton's classes when triton is importable (`torch.compile` does).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

# GPU-only packages: stubbed always, since they cannot work with no GPU visible (CUDA extensions,
# or kernels that need one at import). Triton imports fine on CPU when installed (its `@jit` is
# lazy), so it is stubbed only when missing (CUDA builds of torch bring it along; the CPU wheel
# does not).
GPU_ONLY = ("flash_attn", "flash_attn_interface", "flash_attn_3", "flash_attn_2_cuda", "cutlass",
            "cutlass_evt_fusion", "mamba_ssm", "selective_scan_cuda", "causal_conv1d",
            "causal_conv1d_cuda")
STUB_WHEN_MISSING = ("triton",)
# torch reads triton's version once triton imports (torch.compile does): the lowest one takes its
# oldest, plainest code paths.
VERSIONS = {"triton": "0.0.0"}

# Every stub name the script touched, in order: the last one is the likely culprit of a failure.
touched: list[str] = []


class StubbedGPUObject:
    """Whatever the script reaches through a stubbed module: callable, subscriptable, a decorator,
    usable as a base class. Anything else it is asked to do fails, and that failure is classified
    as a stub limit, not a defect of the script."""

    def __init__(self, name: str):
        self._stub_name = name

    def __getattr__(self, attr: str) -> StubbedGPUObject:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _stub(f"{self._stub_name}.{attr}")

    def __call__(self, *args, **kwargs):
        touched.append(self._stub_name)
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator: keep the function itself
        return _stub(f"{self._stub_name}()")

    def __getitem__(self, key) -> StubbedGPUObject:
        return _stub(f"{self._stub_name}[]")

    def __mro_entries__(self, bases):
        touched.append(self._stub_name)
        return (object,)

    def __repr__(self) -> str:
        return f"<stubbed GPU-only {self._stub_name}>"


class _StubClass(type):
    """The type of a stubbed class: its attributes are stubs too."""

    def __getattr__(cls, attr: str) -> StubbedGPUObject:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _stub(f"{cls._stub_name}.{attr}")


def _stub(name: str) -> StubbedGPUObject:
    touched.append(name)
    last = name.rsplit(".", 1)[-1]
    if last[:1].isupper() and not last.isupper():  # spelt like a class: a class
        return _StubClass(last, (StubbedGPUObject,), {"_stub_name": name, "__init__": _init_instance})
    return StubbedGPUObject(name)


def _init_instance(self, *args, **kwargs) -> None:
    StubbedGPUObject.__init__(self, f"{type(self)._stub_name}()")


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        module.__path__ = []  # a package, so that any submodule can be imported below it
        if name in VERSIONS:
            module.__version__ = VERSIONS[name]

        def __getattr__(attr: str):
            if attr.startswith("__") and attr.endswith("__"):
                raise AttributeError(f"module {name!r} has no attribute {attr!r} (stubbed GPU-only module)")
            return _stub(f"{name}.{attr}")

        module.__getattr__ = __getattr__
        touched.append(name)


class StubFinder(importlib.abc.MetaPathFinder):
    """Serves the stub for `roots` and every dotted path below them."""

    def __init__(self, roots: tuple[str, ...]):
        self.roots = roots

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.roots:
            return None
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


def install() -> tuple[str, ...]:
    """Put the stub finder first on sys.meta_path; return the top-level names it serves."""
    roots = GPU_ONLY + tuple(name for name in STUB_WHEN_MISSING if not _installed(name))
    sys.meta_path.insert(0, StubFinder(roots))
    return roots


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
