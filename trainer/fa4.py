"""FlashAttention 4 (`flash_attn.cute`) as torch custom ops, so torch.compile keeps one graph.

FA4's own `flash_attn_func` is an autograd.Function whose forward compiles and launches CuTe DSL
kernels from Python: torch.compile cannot trace it and breaks the graph at every layer. Here
its forward and backward are each one opaque op with a shape-only fake, and autograd joins them.

Dense causal attention takes q (B, T, H, D) and k, v (B, T, Hkv, D). Document-masked attention
takes the same tensors flattened to (B*T, ...) with `cu_seqlens`, the int32 starts of the
segments plus the total (a segment never crosses a window edge), and `max_seqlen` bounding them.

With fewer key/value heads than query heads, FA4's backward sums each group's dK and dV in fp32
buffers that it zeroes first and converts to bf16 after, and its main kernel is slower than
with one key and value head per query head (docs/benchmarks.md, "One key and value head per query
head for FA4's backward"). Training therefore passes the
keys and values repeated to the query heads (`kv_repeats`; trainer/qk_rope.py's kernel writes
the keys' copies): FA4 then stores dK and dV directly, and the copies' gradients are summed where
that kernel's backward reads them and, for the values, in the compiled graph.
"""

from __future__ import annotations

import torch

from trainer.shards import BOS_ID


def kv_repeats(backend: str, num_heads: int, num_kv_heads: int) -> int:
    """How many times training repeats each key and value head for `backend` (the module's
    docstring says why FA4's are)."""
    return num_heads // num_kv_heads if backend == "fa4" else 1


def bounds_of(input_ids: torch.Tensor) -> torch.Tensor:
    """int32 starts of the segments of the flattened (B, T) windows, then B * T: a segment starts
    at every BOS and at each window's first token. On the GPU its data-dependent length costs a
    host sync; the training loader computes it from its host copy instead (trainer/data.py)."""
    starts = input_ids == BOS_ID
    starts[:, 0] = True
    where = starts.flatten().nonzero().squeeze(1)
    return torch.cat((where, where.new_tensor([input_ids.numel()]))).int()


@torch.library.custom_op("pgolf::segment_bounds", mutates_args=())
def segment_bounds(input_ids: torch.Tensor) -> torch.Tensor:
    """bounds_of as one op, so the compiled graph sees a size it does not specialize on."""
    return bounds_of(input_ids)


@segment_bounds.register_fake
def _segment_bounds_fake(input_ids):
    # The length itself must be the new symbol: at least one segment and the end.
    return input_ids.new_empty(torch.library.get_ctx().new_dynamic_size(min=2), dtype=torch.int32)


# FA4 compiles a varlen kernel for each set of choices its `max_seqlen` implies (tiles, splits),
# each a compile of seconds: a bound rounded up to a multiple of this takes a handful of values
# where windows of many widths would take dozens; the 2,048 and 2,560 windows of training and
# evaluation keep theirs. A larger bound is still a bound.
SEQLEN_BUCKET = 512


def seqlen_bound(max_seqlen: int) -> int:
    return -(-max_seqlen // SEQLEN_BUCKET) * SEQLEN_BUCKET


def _cu(cu_seqlens: torch.Tensor | None, max_seqlen: int) -> dict:
    if cu_seqlens is None:
        return {}
    bound = seqlen_bound(max_seqlen)  # here, inside the op: a plain int, no guard in the graph
    return dict(cu_seqlens_q=cu_seqlens, cu_seqlens_k=cu_seqlens, max_seqlen_q=bound,
                max_seqlen_k=bound)


@torch.library.custom_op("pgolf::fa4_fwd", mutates_args=())
def fa4_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor | None,
            max_seqlen: int) -> tuple[torch.Tensor, torch.Tensor]:
    from flash_attn.cute.interface import _flash_attn_fwd

    out, lse = _flash_attn_fwd(q, k, v, causal=True, return_lse=True, **_cu(cu_seqlens, max_seqlen))[:2]
    return out, lse


@fa4_fwd.register_fake
def _fa4_fwd_fake(q, k, v, cu_seqlens, max_seqlen):
    # The log-sum-exp is (B, H, T) for dense inputs and (H, total) for packed ones.
    lse_shape = (q.size(0), q.size(2), q.size(1)) if cu_seqlens is None else (q.size(1), q.size(0))
    return torch.empty_like(q), q.new_empty(lse_shape, dtype=torch.float32)


@torch.library.custom_op("pgolf::fa4_bwd", mutates_args=())
def fa4_bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
            lse: torch.Tensor, cu_seqlens: torch.Tensor | None,
            max_seqlen: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    from flash_attn.cute.interface import _flash_attn_bwd

    dq, dk, dv = _flash_attn_bwd(q, k, v, out, dout.contiguous(), lse, causal=True,
                                 **_cu(cu_seqlens, max_seqlen))[:3]
    return dq, dk, dv


@fa4_bwd.register_fake
def _fa4_bwd_fake(dout, q, k, v, out, lse, cu_seqlens, max_seqlen):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _fa4_setup(ctx, inputs, output):
    q, k, v, cu_seqlens, max_seqlen = inputs
    ctx.save_for_backward(q, k, v, output[0], output[1], cu_seqlens)
    ctx.max_seqlen = max_seqlen


def _fa4_backward(ctx, dout, dlse):
    q, k, v, out, lse, cu_seqlens = ctx.saved_tensors
    dq, dk, dv = fa4_bwd(dout, q, k, v, out, lse, cu_seqlens, ctx.max_seqlen)
    return dq, dk, dv, None, None


fa4_fwd.register_autograd(_fa4_backward, setup_context=_fa4_setup)


def fa4_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  cu_seqlens: torch.Tensor | None = None, max_seqlen: int = 0) -> torch.Tensor:
    """Causal grouped-query attention through FA4: dense, or inside each segment of cu_seqlens."""
    return fa4_fwd(q.contiguous(), k.contiguous(), v.contiguous(), cu_seqlens, max_seqlen)[0]
