"""A small causal language model with the trainer's model interface, for CPU tests of the export
and evaluation code: `tok_emb` (tied head), `blocks.{i}` of nn.Linear layers, `final_norm`,
`forward_logits(ids) -> float32 logits` after a softcap, `forward(ids, targets) -> mean CE`.

Its matrices are just over the fp16-passthrough size (65,536 elements), so every one of them is
quantized, as in the real model.
"""

from __future__ import annotations

import types

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, DIM, HEADS, LAYERS = 256, 272, 4, 2

# Models this small run fastest on one thread, and it avoids thread-pool stalls on small shared
# machines (every test module that uses them imports this one).
torch.set_num_threads(1)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.attn_norm = nn.RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.mlp_norm = nn.RMSNorm(dim)
        self.fc = nn.Linear(dim, 2 * dim, bias=False)
        self.out = nn.Linear(2 * dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.out(F.relu(self.fc(self.mlp_norm(x))).square())


class TinyLM(nn.Module):
    def __init__(self, vocab: int = VOCAB, dim: int = DIM, heads: int = HEADS, layers: int = LAYERS):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.final_norm = nn.RMSNorm(dim)
        nn.init.normal_(self.tok_emb.weight, std=0.05)

    def forward_logits(self, ids):
        x = self.tok_emb(ids)
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.final_norm(x), self.tok_emb.weight).float()
        return 30.0 * torch.tanh(logits / 30.0)

    def forward(self, ids, targets):
        logits = self.forward_logits(ids)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def tiny_model(seed: int = 0) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM()


def markov_tokens(n: int, seed: int = 0, vocab: int = VOCAB) -> torch.Tensor:
    """A token stream with structure a model can learn: each token mostly follows from the last."""
    gen = torch.Generator().manual_seed(seed)
    table = torch.randint(0, vocab, (vocab,), generator=gen)
    out = torch.empty(n, dtype=torch.int64)
    out[0] = 1
    noise = torch.rand(n, generator=gen) < 0.2
    rand = torch.randint(0, vocab, (n,), generator=gen)
    for i in range(1, n):
        out[i] = rand[i] if noise[i] else table[out[i - 1]]
    return out


def byte_table(vocab: int = VOCAB):
    """target_bytes for the tests: token id -> 1..4 bytes, +1 for a leading space unless the
    previous token is the boundary token 1 (the shape of the real byte tables)."""
    base = torch.arange(vocab) % 4 + 1
    space = torch.arange(vocab) % 3 == 0
    boundary = torch.arange(vocab) == 1

    def target_bytes(prev, tgt, target_pos):
        dev = tgt.device
        return base.to(dev)[tgt] + (space.to(dev)[tgt] & ~boundary.to(dev)[prev]).long()
    return target_bytes


def config(**overrides) -> types.SimpleNamespace:
    """The config fields export and evaluation read, small enough for CPU."""
    fields = dict(matrix_bits=6, embed_bits=8, matrix_clip_sigmas=12.85, embed_clip_sigmas=20.0,
                  gptq_enabled=True, gptq_calibration_batches=4, gptq_reserve_seconds=12.0,
                  max_wallclock_seconds=600.0, compressor="best", eval_seq_len=32, eval_stride=8,
                  sliding_window_enabled=True, val_batch_tokens=32 * 8 * 4, ttt_enabled=True,
                  ttt_lr=0.05, ttt_epochs=2, ttt_momentum=0.9, ttt_chunk_tokens=64,
                  ttt_grad_clip=1.0, ttt_batch_seqs=2, compile=True, mlp_clip_sigmas=None,
                  attn_clip_sigmas=None, lqer_enabled=False, lqer_rank=4, lqer_top_k=3, lqer_group=64,
                  awq_groups=0, awq_group_size=64, awq_bits=8, ttt_mode="sgd",
                  ngram_tilt_enabled=False, ngram_tilt_order=16, ngram_tilt_threshold=0.8,
                  ngram_tilt_boost=2.625)
    fields.update(overrides)
    return types.SimpleNamespace(**fields)
