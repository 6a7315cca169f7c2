"""Floating-point operations of a training step, for model FLOPs utilization (MFU).

Matmuls: 2 FLOPs per weight per token forward, twice that backward, so 6 per weight per token
over the block matrices of every layer run (looped layers count each pass) and the output head;
the embedding lookup is free. Attention: q k^T and the weighted sum of v are 2 * T * d FLOPs
each per token and layer for full attention, half that with the causal mask (the kernels skip
the masked half); times 3 for forward plus backward. Norms and elementwise work are left out,
as in the usual 6N + attention accounting (Chinchilla, PaLM appendix B).
"""

from __future__ import annotations

from trainer.config import Config
from trainer.model import layer_order


def matmul_flops_per_token(cfg: Config, looping: bool) -> int:
    dim, head_dim = cfg.model_dim, cfg.model_dim // cfg.num_heads
    kv_dim = cfg.num_kv_heads * head_dim
    hidden = int(cfg.mlp_mult * dim)
    per_layer = 2 * dim * dim + 2 * dim * kv_dim + 2 * dim * hidden  # q, o, k, v, fc, proj
    layers = sum(len(half) for half in layer_order(cfg, looping))
    return 6 * (layers * per_layer + dim * cfg.vocab_size)


def attention_flops_per_token(cfg: Config, looping: bool, causal: bool = True) -> int:
    layers = sum(len(half) for half in layer_order(cfg, looping))
    full = 3 * 2 * 2 * cfg.train_seq_len * cfg.model_dim  # fwd + bwd, two products per layer
    return layers * (full // 2 if causal else full)


def step_flops(cfg: Config, looping: bool) -> int:
    """FLOPs of one optimizer step (TRAIN_BATCH_TOKENS tokens)."""
    per_token = matmul_flops_per_token(cfg, looping) + attention_flops_per_token(cfg, looping)
    return per_token * cfg.train_batch_tokens
