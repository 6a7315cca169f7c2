"""FlashAttention 3's two entry points served by FlashAttention 4 through pgolf's custom ops.

`benchmarks/record_script.py` puts this folder on the import path of a record's `train_gpt.py`
where FA3 (`flash_attn_interface`) is not installed, so the record runs unchanged on FA4. Only
causal attention without a window, as the records call it.
"""

from trainer.fa4 import fa4_attention


def flash_attn_func(q, k, v, causal=True):
    assert causal, "the records' attention is causal"
    return fa4_attention(q, k, v)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           causal=True, window_size=(-1, -1)):
    assert causal and window_size == (-1, -1), "the records' attention is causal, no window"
    # FA4 compiles a kernel for each max_seqlen it is given, and the records pass each batch's
    # longest segment (a new compile every few batches: minutes). A power of two, at least the
    # records' 2,048-token windows, is still a bound and takes one value in practice.
    bound = max(2048, 1 << (int(max_seqlen_q) - 1).bit_length())
    return fa4_attention(q, k, v, cu_seqlens_q.int(), bound)
