"""Attention backends are chosen by what each flash package really holds, and never crash a run.

The flash packages here are fakes written to a temporary folder on sys.path, shaped like the real
wheels: FlashAttention 4 installs a `flash_attn` package holding only `flash_attn.cute`.
"""

import sys
import textwrap

import pytest
import torch

from trainer import attention, runlog
from trainer.attention import causal_attention, document_segments, first_usable, flash_kernel
from trainer.scoring import SCORING_COMPILE
from trainer.shards import BOS_ID

CPU = torch.device("cpu")
HEADS, KV_HEADS, HEAD_DIM = 4, 2, 16

# FlashAttention 2's interface: (B, T, H, D) tensors, GQA, returns the output (some builds
# also the LSE).
FA2_WORKING = '''
import torch.nn.functional as F

def flash_attn_func(q, k, v, softmax_scale=None, causal=False):
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=causal, enable_gqa=True)
    return out.transpose(1, 2), None
'''
# FlashAttention 4's forward and backward functions (flash_attn.cute.interface), dense causal only:
# the forward returns (out, lse, ...), the backward (dq, dk, dv); the LSE is a stand-in here.
FA4_INTERFACE = '''
import torch

def _scores(q, k):
    # (B, H, T, T) causal attention probabilities; query head h reads KV head h // (H / Hkv).
    k = k.repeat_interleave(q.size(2) // k.size(2), dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * q.size(-1) ** -0.5
    mask = torch.ones(q.size(1), q.size(1), dtype=torch.bool).tril()
    return s.masked_fill(~mask, float("-inf")).softmax(-1)

def _flash_attn_fwd(q, k, v, causal=False, return_lse=False):
    p = _scores(q, k)
    out = torch.einsum("bhqk,bkhd->bqhd", p, v.repeat_interleave(q.size(2) // v.size(2), dim=2))
    return out, out.new_zeros(q.size(0), q.size(2), q.size(1), dtype=torch.float32), None

def _flash_attn_bwd(q, k, v, out, dout, lse, causal=False):
    # Written out: a custom op's implementation runs below autograd.
    group = q.size(2) // k.size(2)
    p = _scores(q, k)
    kr, vr = (t.repeat_interleave(group, dim=2) for t in (k, v))
    dv = torch.einsum("bhqk,bqhd->bkhd", p, dout)
    dp = torch.einsum("bqhd,bkhd->bhqk", dout, vr)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * q.size(-1) ** -0.5
    dq = torch.einsum("bhqk,bkhd->bqhd", ds, kr)
    dk = torch.einsum("bhqk,bqhd->bkhd", ds, q)
    fold = lambda t: t.unflatten(2, (k.size(2), group)).sum(3)
    return dq, fold(dk), fold(dv)
'''
FA4_FAILING = '''
def _flash_attn_fwd(q, k, v, causal=False, return_lse=False):
    raise RuntimeError("Unsupported compute capability 8.0\\nmore detail")

_flash_attn_bwd = _flash_attn_fwd
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
    packages({"flash_attn": "", "flash_attn.cute": "", "flash_attn.cute.interface": FA4_INTERFACE})
    assert flash_kernel("fa3") == (None, "flash_attn_interface not installed")
    assert flash_kernel("fa2") == (None, "flash_attn has no flash_attn_func")
    assert callable(flash_kernel("fa4")[0])
    backend, why = first_usable(CPU, HEADS, KV_HEADS, HEAD_DIM, compile=False)
    assert (backend, why) == ("fa4", "flash_attn.cute installed; flash_attn_interface not installed")
    assert logged() == []  # nothing was skipped for being broken

    torch.manual_seed(0)
    q = torch.randn(2, 24, HEADS, HEAD_DIM)
    k, v = torch.randn(2, 2, 24, KV_HEADS, HEAD_DIM)
    grads = []
    for backend in ("fa4", "sdpa"):  # the custom ops carry the gradient through FA4's backward
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        out = causal_attention(*leaves, backend)
        out.square().sum().backward()
        grads.append([out.detach()] + [t.grad for t in leaves])
    for ours, ref in zip(*grads):
        assert torch.allclose(ours, ref, atol=1e-5)


def test_a_kernel_that_fails_is_skipped_with_one_line_each(packages, logged):
    packages({"flash_attn": "", "flash_attn.cute": "", "flash_attn.cute.interface": FA4_FAILING})
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
              "flash_attn": FA2_WORKING})
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


def test_flash_attention_4_without_its_interface_module_is_skipped(packages):
    packages({"flash_attn": "", "flash_attn.cute": FA2_WORKING})  # only the public function
    assert flash_kernel("fa4") == (None, "flash_attn.cute has no interface._flash_attn_fwd")


def test_segment_bounds_from_bos_positions_compile_for_any_number_of_documents():
    """FlashAttention 4's packed bounds: every BOS and each window's first token start a segment;
    their count is data-dependent, and one compiled graph takes any count."""
    compiled = torch.compile(lambda ids: document_segments(ids, "fa4") * 2, backend="eager",
                             fullgraph=True, dynamic=False)
    for bos in ([5, 30], [0, 17, 18, 40, 63]):  # flat positions in two windows of 32
        ids = torch.full((2, 32), 7)
        ids.view(-1)[bos] = BOS_ID
        expected = sorted({0, 32, *bos}) + [64]
        assert document_segments(ids, "fa4").tolist() == expected
        assert compiled(ids).tolist() == [2 * b for b in expected]
    assert document_segments(ids, "sdpa")[1].tolist() == [0] * 8 + [1] * 23 + [2]  # BOS at 8 and 31


@pytest.mark.parametrize("options, frames", [(SCORING_COMPILE, 1), (dict(dynamic=False), 3)])
def test_scoring_compiles_one_graph_for_any_number_of_documents(options, frames):
    """The scoring phases' compile options keep the data-dependent bounds inside one graph;
    without fullgraph, dynamo breaks there and compiles the rest again for every new count
    (one graph per count here; about 24 s per batch on an H200)."""
    def logits(ids):
        return (document_segments(ids, "fa4").float().sum() + ids).float()

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(logits, backend="eager", **options)
    for bos in ([5], [5, 30], [0, 17, 18, 40]):
        ids = torch.full((2, 32), 7)
        ids.view(-1)[bos] = BOS_ID
        assert torch.equal(compiled(ids), logits(ids))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == frames


def test_fa4_varlen_bounds_take_a_few_values_over_lora_ttt_widths():
    """LoRA TTT's windows widen 48 tokens a step: FA4 sees four bounds, each at least the
    width, and training's and evaluation's windows keep their own."""
    from trainer.fa4 import _cu, seqlen_bound

    widths = range(48, 2049, 48)
    assert {seqlen_bound(w) for w in widths} == {512, 1024, 1536, 2048}
    assert all(seqlen_bound(w) >= w for w in widths)
    assert [seqlen_bound(w) for w in (1024, 2048, 2560)] == [1024, 2048, 2560]
    cu = torch.tensor([0, 30, 100], dtype=torch.int32)
    assert _cu(cu, 100)["max_seqlen_q"] == _cu(cu, 100)["max_seqlen_k"] == 512
    assert _cu(None, 100) == {}
