"""Two small learned gates that read the first GATE_WINDOW dims of the residual stream.

SmearGate (PR #1667; the BOS mask from PRs #1851/#1855): before the first block, each token's
embedding takes in a gated share of the previous token's,
    x_t += lam * sigmoid(w . x_t[:window]) * x_{t-1} * [token t is not BOS],
a bigram-like signal for 13 parameters. Training sequences are documents packed end to end, each
opening with BOS: without the mask the BOS of a document would carry the last token of the one
before it. lam and w start at zero, so a new model starts without the smear.

Sparse attention gate (PR #1787): each head's output, before the output projection, is scaled by
    sigmoid(scale * w_h . x_t[:window]),
x_t the attention's input, so a head can turn itself down token by token. w starts at zero:
every gate is 0.5, which the learned attention scale absorbs. Reading a 12-dim window instead of
the whole stream (PR #1736's dense gate) keeps the gate's weights at 96 per layer.
Both gates are causal: position t reads only positions t and t-1.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from trainer.shards import BOS_ID


class SmearGate(nn.Module):
    def __init__(self, window: int):
        super().__init__()
        self.window = window
        self.weight = nn.Parameter(torch.zeros(1, window))
        self.lam = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
        """x (B, T, dim) the embeddings of input_ids (B, T); position 0 has no predecessor."""
        cur = x[:, 1:]
        gate = self.lam.to(x.dtype) * torch.sigmoid(F.linear(cur[..., :self.window],
                                                             self.weight.to(x.dtype)))
        keep = (input_ids[:, 1:] != BOS_ID).to(x.dtype)[..., None]
        return torch.cat((x[:, :1], cur + gate * keep * x[:, :-1]), dim=1)


class HeadGate(nn.Module):
    def __init__(self, num_heads: int, window: int, scale: float):
        super().__init__()
        self.window, self.scale = window, scale
        self.weight = nn.Parameter(torch.zeros(num_heads, window))

    def forward(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """y (B, T, H, D) the heads' outputs, x (B, T, dim) the attention's input."""
        logit = F.linear(x[..., :self.window], self.weight.to(x.dtype))
        return y * torch.sigmoid(self.scale * logit).to(y.dtype)[..., None]
