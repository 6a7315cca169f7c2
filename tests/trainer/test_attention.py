"""Attention backends are chosen by what each flash package really holds, and never crash a run.

The flash packages here are fakes written to a temporary folder on sys.path, shaped like the real
wheels: FlashAttention 4 installs a `flash_attn` package holding only `flash_attn.cute`.
"""

import sys
import textwrap

import pytest
import torch

from trainer import attention, runlog
from trainer.attention import causal_attention, first_usable, flash_kernel

CPU = torch.device("cpu")
HEADS, KV_HEADS, HEAD_DIM = 4, 2, 16

# FlashAttention 4's interface: (B, T, H, D) tensors, GQA, returns (out, lse).
FA4_WORKING = '''
import torch.nn.functional as F

def flash_attn_func(q, k, v, softmax_scale=None, causal=False):
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=causal, enable_gqa=True)
    return out.transpose(1, 2), None
'''
FA4_FAILING = '''
def flash_attn_func(q, k, v, softmax_scale=None, causal=False):
    raise RuntimeError("Unsupported compute capability 8.0\\nmore detail")
'''


@pytest.fixture
def packages(tmp_path, monkeypatch):
    """Write fake packages {dotted module: source} and make them the only flash packages."""
    def install(modules: dict[str, str]) -> None:
        for dotted, source in modules.items():
            folder = tmp_path.joinpath(*dotted.split("."))
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "__init__.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] in ("flash_attn", "flash_attn_interface")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(attention, "_flash_kernels", {})
    return install


@pytest.fixture
def logged(tmp_path):
    path = tmp_path / "train.log"
    runlog.open_log(path, True)
    yield lambda: path.read_text().splitlines()
    runlog.open_log(None, False)


def test_flash_attention_4_alone_is_found_and_used(packages, logged):
    packages({"flash_attn": "", "flash_attn.cute": FA4_WORKING})
    assert flash_kernel("fa3") == (None, "flash_attn_interface not installed")
    assert flash_kernel("fa2") == (None, "flash_attn has no flash_attn_func")
    assert callable(flash_kernel("fa4")[0])
    backend, why = first_usable(CPU, HEADS, KV_HEADS, HEAD_DIM, compile=False)
    assert (backend, why) == ("fa4", "flash_attn.cute installed; flash_attn_interface not installed")
    assert logged() == []  # nothing was skipped for being broken

    torch.manual_seed(0)
    q = torch.randn(2, 24, HEADS, HEAD_DIM)
    k, v = torch.randn(2, 2, 24, KV_HEADS, HEAD_DIM)
    assert torch.allclose(causal_attention(q, k, v, "fa4"), causal_attention(q, k, v, "sdpa"))


def test_a_kernel_that_fails_is_skipped_with_one_line_each(packages, logged):
    packages({"flash_attn": "", "flash_attn.cute": FA4_FAILING})
    backend, why = first_usable(CPU, HEADS, KV_HEADS, HEAD_DIM, compile=False)
    assert backend.startswith("sdpa")
    assert why.startswith("flash_attn_interface not installed; fa4 unusable; fa2 unusable")
    assert logged() == [
        "attention:skipped fa4 (flash_attn.cute failed a test step "
        "(RuntimeError: Unsupported compute capability 8.0))",
        "attention:skipped fa2 (flash_attn has no flash_attn_func)",
    ]


def test_a_package_that_does_not_import_is_skipped(packages, logged):
    packages({"flash_attn_interface": "raise OSError('libcudart.so.13: cannot open shared object file')",
              "flash_attn": FA4_WORKING})
    assert flash_kernel("fa3") == (None, "flash_attn_interface does not import "
                                         "(OSError: libcudart.so.13: cannot open shared object file)")
    assert flash_kernel("fa4") == (None, "flash_attn.cute not installed")
    backend, _ = first_usable(CPU, HEADS, KV_HEADS, HEAD_DIM, compile=False)
    assert backend == "fa2"  # FlashAttention 2's flash_attn_func has the same interface
    assert logged() == ["attention:skipped fa3 (flash_attn_interface does not import "
                        "(OSError: libcudart.so.13: cannot open shared object file))"]


def test_a_missing_dependency_is_not_called_a_missing_package(packages):
    packages({"flash_attn": "", "flash_attn.cute": "import cutlass_dsl_not_here\n"})
    assert flash_kernel("fa4") == (None, "flash_attn.cute does not import (ModuleNotFoundError: "
                                         "No module named 'cutlass_dsl_not_here')")
