"""Causal grouped-query attention on the best kernel this machine has.

FlashAttention 3 (`flash_attn_interface`, Hopper) was used by every record since PR #122; without
it FlashAttention 4 (`flash_attn.cute`, CuTe DSL), then FlashAttention 2 (`flash_attn`), then
PyTorch SDPA. Of SDPA's kernels cuDNN was the fastest measured for the record's shapes
(docs/benchmarks.md, "Figures behind the code's choices"), so `auto` takes it when a probe with
the model's head layout runs.

A flash package is judged by what it really holds: the FlashAttention 4 wheel installs a
`flash_attn` package with only `flash_attn.cute` in it, so `import flash_attn` succeeds without
FlashAttention 2's `flash_attn_func`. Each candidate is imported, looked up and run forward and
backward once (compiled when the run compiles) before it is chosen; one that fails any of these
is skipped with a log line saying why, so an odd install never stops a run.

FlashAttention 4 runs through torch custom ops (trainer/fa4.py): called directly, its Python
forward breaks the compiled graph at every layer.
"""

from __future__ import annotations

import importlib

import torch
import torch.nn.functional as F

from trainer.errors import TrainerError
from trainer.fa4 import fa4_attention, segment_bounds
from trainer.runlog import log
from trainer.shards import BOS_ID

# backend -> the module that provides its kernels, in the order `auto` tries them.
FLASH_MODULES = {"fa3": "flash_attn_interface", "fa4": "flash_attn.cute", "fa2": "flash_attn"}
# FlashAttention 4 runs through its forward and backward functions (trainer/fa4.py).
KERNEL_NAMES = {"fa3": ("flash_attn_func",), "fa2": ("flash_attn_func",),
                "fa4": ("interface._flash_attn_fwd", "interface._flash_attn_bwd")}
_flash_kernels: dict = {}


def flash_kernel(backend: str):
    """(the backend's first kernel, "") for a FlashAttention backend, or (None, why it cannot be
    had)."""
    if backend not in _flash_kernels:
        _flash_kernels[backend] = _import_flash(FLASH_MODULES[backend], KERNEL_NAMES[backend])
    return _flash_kernels[backend]


def _import_flash(name: str, kernels: tuple[str, ...]):
    found = []
    for dotted in kernels:
        module_name, _, attr = (name + "." + dotted).rpartition(".")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (name + ".").startswith(exc.name + "."):  # not a dependency
                return None, f"{name} not installed"
            if exc.name == module_name:
                return None, f"{name} has no {dotted}"
            return None, f"{name} does not import ({_one_line(exc)})"
        except Exception as exc:  # a broken build fails in many ways (undefined symbol, CUDA mismatch)
            return None, f"{name} does not import ({_one_line(exc)})"
        kernel = getattr(module, attr, None)
        if not callable(kernel):
            return None, f"{name} has no {dotted}"
        found.append(kernel)
    return found[0], ""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


def flash_problem(backend: str, device: torch.device, num_heads: int, num_kv_heads: int,
                  head_dim: int, compile: bool) -> str | None:
    """None when the backend imports and runs a forward and backward step here; else why not."""
    kernel, why = flash_kernel(backend)
    if kernel is None:
        return why
    try:
        _probe(backend, device, num_heads, num_kv_heads, head_dim, compile)
    except Exception as exc:  # any failure of a third-party kernel means: do not use it
        return f"{FLASH_MODULES[backend]} failed a test step ({_one_line(exc)})"
    return None


def choose_backend(requested: str, device: torch.device, num_heads: int, num_kv_heads: int,
                   head_dim: int, compile: bool = False) -> tuple[str, str]:
    """(backend, why): the requested one, or for `auto` the first that works here. `compile`:
    the run compiles the model, so the flash kernels are probed compiled too."""
    if device.type != "cuda":
        return "sdpa", "CPU" if requested == "auto" else f"CPU ignores ATTN_BACKEND={requested}"
    if requested in FLASH_MODULES:
        problem = flash_problem(requested, device, num_heads, num_kv_heads, head_dim, compile)
        if problem is not None:
            raise TrainerError(f"ATTN_BACKEND={requested} cannot run here: {problem}; "
                               "set ATTN_BACKEND=auto to use the best kernel that does")
        return requested, "ATTN_BACKEND"
    if requested != "auto":
        return requested, "ATTN_BACKEND"
    return first_usable(device, num_heads, num_kv_heads, head_dim, compile)


def first_usable(device: torch.device, num_heads: int, num_kv_heads: int, head_dim: int,
                 compile: bool) -> tuple[str, str]:
    """The `auto` choice: FlashAttention 3, 4, 2, then SDPA's cuDNN or flash kernel, else SDPA.
    A package that is installed but unusable gets its own log line."""
    missing = []
    for backend in FLASH_MODULES:
        problem = flash_problem(backend, device, num_heads, num_kv_heads, head_dim, compile)
        if problem is None:
            return backend, f"{FLASH_MODULES[backend]} installed" + "".join(f"; {m}" for m in missing)
        if problem.endswith("not installed"):
            missing.append(problem)
        else:
            log(f"attention:skipped {backend} ({problem})")
            missing.append(f"{backend} unusable")
    why = "; ".join(missing)
    for backend in ("sdpa_cudnn", "sdpa_flash"):
        if _sdpa_works(backend, device, num_heads, num_kv_heads, head_dim):
            return backend, why
    return "sdpa", why + "; no fused SDPA kernel ran"


def activate_backend(backend: str) -> None:
    """Point PyTorch SDPA at one kernel (process-wide; a no-op for the flash packages)."""
    if backend.startswith("sdpa") and torch.cuda.is_available():
        only = {"sdpa_cudnn": "cudnn", "sdpa_flash": "flash"}.get(backend)
        torch.backends.cuda.enable_cudnn_sdp(only in (None, "cudnn"))
        torch.backends.cuda.enable_flash_sdp(only in (None, "flash"))
        torch.backends.cuda.enable_mem_efficient_sdp(only is None)
        torch.backends.cuda.enable_math_sdp(only is None)


def document_segments(input_ids: torch.Tensor, backend: str) -> torch.Tensor:
    """What attention needs to stay inside the documents of the (B, T) windows: for FlashAttention
    4's varlen kernel the segment bounds of the flattened windows, else each token's segment
    number in its window (a new one at every BOS)."""
    if backend == "fa4":
        return segment_bounds(input_ids)
    return (input_ids == BOS_ID).cumsum(1)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, backend: str,
                     segments: torch.Tensor | None = None) -> torch.Tensor:
    """q (B, T, H, D), k and v (B, T, Hkv, D) -> (B, T, H, D); query head h reads KV head
    h // (H / Hkv). With `segments` (document_segments) no token attends across a document."""
    if segments is not None:
        if backend == "fa4":
            B, T = q.shape[:2]
            return fa4_attention(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), segments, T).view_as(q)
        # Other kernels: a dense mask, correct and slower (no varlen kernel is wired for them).
        mask = (segments[:, :, None] == segments[:, None, :]).tril()[:, None]
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           attn_mask=mask, enable_gqa=True)
        return y.transpose(1, 2)
    if backend == "fa4":
        return fa4_attention(q, k, v)
    if backend in FLASH_MODULES:
        y = flash_kernel(backend)[0](q, k, v, causal=True)
        return y[0] if isinstance(y, tuple) else y  # FA4 and some FA3 builds also return the LSE
    y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                       is_causal=True, enable_gqa=True)
    return y.transpose(1, 2)


def _sdpa_works(backend: str, device: torch.device, num_heads: int, num_kv_heads: int,
                head_dim: int) -> bool:
    """Run forward and backward once with only `backend` enabled, at the model's head layout."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    kernel = {"sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_flash": SDPBackend.FLASH_ATTENTION}
    try:
        with sdpa_kernel([kernel[backend]]):
            _probe(backend, device, num_heads, num_kv_heads, head_dim, compile=False)
        return True
    except RuntimeError:
        return False


def _probe(backend: str, device: torch.device, num_heads: int, num_kv_heads: int, head_dim: int,
           compile: bool) -> None:
    """Forward and backward once through `backend` on one bf16 sequence of 256 tokens at the
    model's head layout; raises whatever the kernel raises."""
    def step(q, k, v):
        return causal_attention(q, k, v, backend).float().sum()

    if compile:
        step = torch.compile(step, fullgraph=True, dynamic=False)
    q = torch.randn((1, 256, num_heads, head_dim), device=device, dtype=torch.bfloat16,
                    requires_grad=True)
    k, v = (torch.randn((1, 256, num_kv_heads, head_dim), device=device, dtype=torch.bfloat16,
                        requires_grad=True) for _ in range(2))
    step(q, k, v).backward()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
