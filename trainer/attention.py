"""Causal grouped-query attention on the best kernel this machine has.

FlashAttention 3 (`flash_attn_interface`, Hopper) was used by every record since PR #122; without
it FlashAttention 2, then PyTorch SDPA. Of SDPA's kernels cuDNN was the fastest measured for the
record's shapes on an H200 (2.39 ms forward + backward with native GQA vs 3.70 ms for the flash
kernel), so `auto` takes it when a probe with the model's head layout runs. The flash packages
are optional: they are imported only when asked for.
"""

from __future__ import annotations

import importlib

import torch
import torch.nn.functional as F

from trainer.errors import TrainerError

_FLASH_MODULES = {"fa3": "flash_attn_interface", "fa2": "flash_attn"}
_flash_funcs: dict = {}


def _flash_func(backend: str):
    """`flash_attn_func` of FlashAttention 3 or 2, or None when the package is missing."""
    if backend not in _flash_funcs:
        try:
            module = importlib.import_module(_FLASH_MODULES[backend])
            _flash_funcs[backend] = module.flash_attn_func
        except ImportError:
            _flash_funcs[backend] = None
    return _flash_funcs[backend]


def choose_backend(requested: str, device: torch.device, num_heads: int, num_kv_heads: int,
                   head_dim: int) -> tuple[str, str]:
    """(backend, why): the requested one, or for `auto` the first that works here."""
    if device.type != "cuda":
        return "sdpa", "CPU" if requested == "auto" else f"CPU ignores ATTN_BACKEND={requested}"
    if requested in _FLASH_MODULES and _flash_func(requested) is None:
        raise TrainerError(f"ATTN_BACKEND={requested} but {_FLASH_MODULES[requested]} is not installed")
    if requested != "auto":
        return requested, "ATTN_BACKEND"
    missing = []
    for backend in ("fa3", "fa2"):
        if _flash_func(backend) is not None:
            return backend, f"{_FLASH_MODULES[backend]} installed"
        missing.append(_FLASH_MODULES[backend])
    why = " and ".join(missing) + " not installed"
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


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, backend: str) -> torch.Tensor:
    """q (B, T, H, D), k and v (B, T, Hkv, D) -> (B, T, H, D); query head h reads KV head
    h // (H / Hkv)."""
    if backend in ("fa3", "fa2"):
        y = _flash_func(backend)(q, k, v, causal=True)
        return y[0] if isinstance(y, tuple) else y  # some FA3 builds also return the LSE
    y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                       is_causal=True, enable_gqa=True)
    return y.transpose(1, 2)


def _sdpa_works(backend: str, device: torch.device, num_heads: int, num_kv_heads: int,
                head_dim: int) -> bool:
    """Run forward and backward once with only `backend` enabled, at the model's head layout."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    kernel = {"sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_flash": SDPBackend.FLASH_ATTENTION}
    shape = (1, 256, num_heads, head_dim)
    q = torch.randn(shape, device=device, dtype=torch.bfloat16, requires_grad=True)
    kv_shape = (1, 256, num_kv_heads, head_dim)
    k = torch.randn(kv_shape, device=device, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(kv_shape, device=device, dtype=torch.bfloat16, requires_grad=True)
    try:
        with sdpa_kernel([kernel[backend]]):
            causal_attention(q, k, v, backend).float().sum().backward()
        torch.cuda.synchronize(device)
        return True
    except RuntimeError:
        return False
