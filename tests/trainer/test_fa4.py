"""FlashAttention 4 through the custom ops against PyTorch's attention in fp64, on a Hopper GPU.

Skipped without a CUDA GPU or without the package (`pip install 'pgolf[gpu]'`). bf16 keeps 8
significant bits: each output and gradient must be as close to fp64 as PyTorch's own bf16 SDPA
(plus one rounding), and within 1e-2 relative.
"""

import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from trainer.fa4 import fa4_attention
from trainer_support import assert_as_close_as, relative_error

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or importlib.util.find_spec("flash_attn") is None,
    reason="FlashAttention 4 needs a CUDA GPU and the flash-attn-4 package")


def _sdpa(q, k, v):
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=True, enable_gqa=True)
    return out.transpose(1, 2)


def _documents(q, k, v, starts):
    """Causal attention inside each segment of the flattened windows, one SDPA call each."""
    bounds = starts + [q.size(0) * q.size(1)]
    flat = [t.flatten(0, 1) for t in (q, k, v)]
    parts = [_sdpa(*(t[a:b].unsqueeze(0) for t in flat))[0] for a, b in zip(bounds, bounds[1:])]
    return torch.cat(parts).view_as(q)


def _outputs(fn, q, k, v, grad):
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out = fn(*leaves)
    return [out.detach(), *torch.autograd.grad(out, leaves, grad)]


def _inputs(B, T, H, Hkv, D, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(B, T, h, D, device="cuda", generator=gen).bfloat16() for h in (H, Hkv, Hkv, H)]


def _check(ours, bf16, exact):
    assert all(t.dtype == torch.bfloat16 for t in bf16)
    assert_as_close_as(ours, bf16, exact, 2**-8)


@pytest.mark.parametrize("shape", [(2, 2048, 8, 4, 64), (3, 300, 8, 8, 64), (1, 512, 4, 1, 128)])
def test_dense_matches_fp64_as_closely_as_sdpa(shape):
    q, k, v, grad = _inputs(*shape, seed=shape[1])
    ours = _outputs(fa4_attention, q, k, v, grad)
    bf16 = _outputs(_sdpa, q, k, v, grad)
    exact = _outputs(_sdpa, q.double(), k.double(), v.double(), grad.double())
    _check(ours, bf16, exact)


def test_document_masked_matches_attention_per_document():
    B, T = 3, 1024
    q, k, v, grad = _inputs(B, T, 8, 4, 64, seed=5)
    starts = sorted({0, 1024, 2048, 17, 300, 301, 1500, 2900})  # window starts and documents
    cu = torch.tensor(starts + [B * T], dtype=torch.int32, device="cuda")

    def packed(q, k, v):
        flat = [t.flatten(0, 1) for t in (q, k, v)]
        return fa4_attention(*flat, cu_seqlens=cu, max_seqlen=T).view_as(q)

    ours = _outputs(packed, q, k, v, grad)
    bf16 = _outputs(lambda *t: _documents(*t, starts), q, k, v, grad)
    exact = _outputs(lambda *t: _documents(*t, starts), q.double(), k.double(), v.double(), grad.double())
    _check(ours, bf16, exact)


@pytest.mark.parametrize("T", [48, 100, 600])
def test_document_masked_at_the_widths_lora_ttt_windows_take(T):
    """Windows narrower than their rounded bound (trainer.fa4.seqlen_bound): the same attention."""
    B = 4
    q, k, v, grad = _inputs(B, T, 8, 4, 64, seed=T)
    starts = sorted({*range(0, B * T, T), T // 3, 2 * T + 5})
    cu = torch.tensor(starts + [B * T], dtype=torch.int32, device="cuda")

    def packed(q, k, v):
        flat = [t.flatten(0, 1) for t in (q, k, v)]
        return fa4_attention(*flat, cu_seqlens=cu, max_seqlen=T).view_as(q)

    ours = _outputs(packed, q, k, v, grad)
    bf16 = _outputs(lambda *t: _documents(*t, starts), q, k, v, grad)
    exact = _outputs(lambda *t: _documents(*t, starts), q.double(), k.double(), v.double(), grad.double())
    _check(ours, bf16, exact)


def test_compiled_graph_keeps_the_op_and_matches_eager():
    q, k, v, grad = _inputs(2, 512, 8, 4, 64, seed=9)

    def layer(q, k, v):
        return fa4_attention(q * 2, k, v).square()

    compiled = torch.compile(layer, fullgraph=True, dynamic=False)  # fails on a graph break
    for value, expected in zip(_outputs(compiled, q, k, v, grad), _outputs(layer, q, k, v, grad)):
        assert relative_error(value, expected) < 1e-2


def test_document_bounds_from_bos_compile_once_for_any_number_of_documents():
    from trainer.attention import causal_attention, document_segments
    from trainer.shards import BOS_ID

    def layer(q, k, v, ids):
        return causal_attention(q, k, v, "fa4", document_segments(ids, "fa4"))

    compiled = torch.compile(layer, fullgraph=True, dynamic=False)
    q, k, v, grad = _inputs(2, 512, 8, 4, 64, seed=11)
    for bos in ([5, 300, 700], [100, 900, 901, 1000, 1023]):  # flat positions of the BOS tokens
        ids = torch.full((2, 512), 7, device="cuda")
        ids.view(-1)[bos] = BOS_ID
        starts = sorted({0, 512, *bos})
        ours = _outputs(lambda *t: compiled(*t, ids), q, k, v, grad)
        expected = _outputs(lambda *t: _documents(*t, starts), q, k, v, grad)
        for value, reference in zip(ours, expected):
            assert relative_error(value, reference) < 1e-2


def test_bounds_made_on_the_host_give_the_same_attention_in_one_graph():
    """Training hands the compiled model the bounds the loader made from its host copy
    (trainer/data.py); the same attention as with the in-graph op, one graph for any count."""
    from trainer.attention import causal_attention, document_segments
    from trainer.data import host_bounds
    from trainer.shards import BOS_ID

    def layer(q, k, v, bounds):
        return causal_attention(q, k, v, "fa4", bounds)

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(layer, fullgraph=True, dynamic=False)
    q, k, v, grad = _inputs(2, 512, 8, 4, 64, seed=12)
    for bos in ([5, 300, 700], [100, 900, 901, 1000, 1023], [64]):
        ids = torch.full((2, 512), 7)
        ids.view(-1)[bos] = BOS_ID
        bounds = host_bounds(ids, torch.device("cuda"))
        ours = _outputs(lambda *t: compiled(*t, bounds), q, k, v, grad)
        in_graph = _outputs(lambda *t: layer(*t, document_segments(ids.cuda(), "fa4")), q, k, v, grad)
        assert torch.equal(ours[0], in_graph[0])
        for value, reference in zip(ours[1:], in_graph[1:]):  # dq sums by atomics, in any order
            assert relative_error(value, reference) < 1e-3
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_fa3_shim_takes_the_records_padded_bounds():
    # benchmarks/fa3_shim serves a record's FA3 calls: its varlen call gets (N, H, D) tensors,
    # bounds padded to a bucket with the total repeated (empty segments) and the longest segment.
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "fa3_shim" / "flash_attn_interface.py"
    spec = importlib.util.spec_from_file_location("fa3_shim_under_test", path)
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    q, k, v, grad = _inputs(1, 3072, 8, 4, 64, seed=13)
    starts = [0, 17, 300, 301, 1500, 2900]
    cu = torch.tensor(starts + [3072] * 10, dtype=torch.int32, device="cuda")
    longest = max(b - a for a, b in zip(starts, starts[1:] + [3072]))

    def packed(q, k, v):
        return shim.flash_attn_varlen_func(q[0], k[0], v[0], cu_seqlens_q=cu, cu_seqlens_k=cu,
                                           max_seqlen_q=longest, max_seqlen_k=longest,
                                           causal=True, window_size=(-1, -1))[None]

    ours = _outputs(packed, q, k, v, grad)
    expected = _outputs(lambda *t: _documents(*t, starts), q, k, v, grad)
    for value, reference in zip(ours, expected):
        assert relative_error(value, reference) < 1e-2
    dense = _outputs(lambda *t: shim.flash_attn_func(*t, causal=True), q, k, v, grad)
    for value, reference in zip(dense, _outputs(_sdpa, q, k, v, grad)):
        assert relative_error(value, reference) < 1e-2
