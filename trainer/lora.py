"""Per-document LoRA adapters for test-time training (TTT_MODE=lora; PRs #1530, #1855, #1953).

A batch of documents is adapted side by side: every adapter holds one low-rank pair per document,
A (docs, rank, in) and B (docs, out, rank), and row d of a batch only ever meets pair d, so each
document has adapters of its own. B starts at zero (the adapted model starts as the base model)
and A at one fixed draw shared by every document, so a document's scores do not depend on which
batch it lands in. The output is scaled by alpha / rank (alpha 144, PR #1767), which keeps the
step size of Adam's updates the same at any rank.

Where they sit (the no-Q/V mask of PR #1953, its best measured): beside the key projection,
beside the whole attention and the whole MLP of every virtual layer (a looped block gets one set
per pass), and beside the output head. Queries and values keep the base weights.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

LORA_ALPHA = 144.0


class BatchedLoRA(nn.Module):
    def __init__(self, docs: int, d_in: int, d_out: int, rank: int, device: torch.device):
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)
        draw = torch.empty(rank, d_in).uniform_(-bound, bound,
                                                generator=torch.Generator().manual_seed(d_in + d_out))
        self.register_buffer("start", draw.to(device), persistent=False)
        self.A = nn.Parameter(torch.empty(docs, rank, d_in, device=device))
        self.B = nn.Parameter(torch.empty(docs, d_out, rank, device=device))
        self.scale = LORA_ALPHA / rank
        self.reset()

    @torch.no_grad()
    def reset(self) -> None:
        """Every document back to the start: A the shared draw, B zero."""
        self.A.copy_(self.start.expand_as(self.A))
        self.B.zero_()

    def forward(self, x: Tensor) -> Tensor:
        """x (docs, T, in) -> (docs, T, out)."""
        return (x @ self.A.to(x.dtype).transpose(1, 2)) @ self.B.to(x.dtype).transpose(1, 2) * self.scale


class LayerAdapters(nn.Module):
    """The adapters of one virtual layer: key, attention and MLP."""

    def __init__(self, docs: int, dim: int, kv_dim: int, rank: int, device: torch.device):
        super().__init__()
        self.k = BatchedLoRA(docs, dim, kv_dim, rank, device)
        self.attn = BatchedLoRA(docs, dim, dim, rank, device)
        self.mlp = BatchedLoRA(docs, dim, dim, rank, device)


class DocAdapters(nn.Module):
    """Every adapter of a batch of `docs` documents for `model` (a trainer.model.GPT)."""

    def __init__(self, model: nn.Module, docs: int, rank: int, device: torch.device):
        super().__init__()
        self.docs = docs
        attn = model.blocks[0].attn
        dim, kv_dim = model.tok_emb.embedding_dim, attn.num_kv_heads * attn.head_dim
        layers = (len(model.encoder_indices) + len(model.decoder_indices) if model.looping_active
                  else len(model.blocks))
        self.layers = nn.ModuleList(LayerAdapters(docs, dim, kv_dim, rank, device)
                                    for _ in range(layers))
        self.head = BatchedLoRA(docs, dim, model.tok_emb.num_embeddings, rank, device)

    def reset(self) -> None:
        for module in self.modules():
            if isinstance(module, BatchedLoRA):
                module.reset()
