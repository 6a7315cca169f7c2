"""Token n-gram tilt at scoring time (NGRAM_TILT_ENABLED; the token channel of PR #2135, in the
renormalized form of PR #1514).

At a scored position p (which predicts token p+1), the n-gram's context is the ORDER-1 stream
tokens ending at p. A table of counts over positions already scored says how often each next
token followed that context. Where the context was seen and its most frequent next token (the
hint; ties go to the lowest id) took at least THRESHOLD of its occurrences, the model's
distribution is tilted toward the hint and renormalized over the whole vocabulary:

    p'(a) = p(a) * exp(BOOST * [a == hint]) / Z,    Z = 1 + p(hint) * (exp(BOOST) - 1)

so the scored loss is  nll - BOOST * [y == hint] + log(1 + p(hint) * expm1(BOOST)).  Whether and
how much to tilt reads the context and the table only, never the token being scored; the table
takes a position's (context, next token) only after that position was scored. A phase starts
with an empty table. The caller decides which scored positions the table takes and when
(trainer/sliding.py: each batch after it is scored; trainer/doc_ttt.py: each group after it is
scored, and beside it a table of each document's own chunks, each after it is scored), so that
the table a position sees depends on earlier tokens alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

# Multiplier of the contexts' polynomial hash (odd, 64 bits; products wrap).
_HASH_MULT = 0x100000001B3


def context_keys(tokens: Tensor, last: Tensor, order: int,
                 salt: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(hash, valid) of the contexts tokens[p - order + 2 .. p] for each position p in `last`
    (hashed with `salt`, if given: a table per value of it): valid where the stream has
    order - 1 tokens up to p."""
    keys = torch.zeros_like(last, dtype=torch.int64) if salt is None else salt.long() + 1
    for back in range(order - 1):
        keys = keys * _HASH_MULT + tokens[(last - back).clamp_min(0)].long() + 1
    return keys, last >= order - 2


class NgramTilt:
    """The counts of one phase's scored positions, on the device, in sorted tensors: one row per
    (context, next token) seen, and per context its total, its top count and that token."""

    def __init__(self, order: int, threshold: float, boost: float, device: torch.device):
        self.order, self.threshold, self.boost, self.device = order, threshold, boost, device
        empty = torch.zeros(0, dtype=torch.int64, device=device)
        self.pair_ctx, self.pair_tok, self.pair_count = empty, empty, empty  # by (context, token)
        self.ctx, self.total, self.top, self.top_tok = empty, empty, empty, empty  # by context

    def hints(self, tokens: Tensor, last: Tensor, salt: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(hinted token, boost) for the positions `last` (any shape): boost 0 where the gate is
        shut. Reads the stream up to each position and the table, nothing after."""
        keys, valid = context_keys(tokens, last, self.order, salt)
        if self.ctx.numel() == 0:
            return torch.zeros_like(keys), torch.zeros(keys.shape, device=keys.device)
        i = torch.searchsorted(self.ctx, keys).clamp_max(self.ctx.numel() - 1)
        seen = valid & (self.ctx[i] == keys)
        gate = seen & (self.top[i] >= self.threshold * self.total[i])
        return self.top_tok[i], torch.where(gate, self.boost, 0.0)

    def empty(self) -> NgramTilt:
        """A table of the same settings, empty."""
        return NgramTilt(self.order, self.threshold, self.boost, self.device)

    def hints_after(self, first: NgramTilt, tokens: Tensor, last: Tensor,
                    salt: Tensor) -> tuple[Tensor, Tensor]:
        """The hints of the table `first` (read with `salt`) where its gate is open, else this
        table's."""
        hint, boost = self.hints(tokens, last)
        own_hint, own_boost = first.hints(tokens, last, salt)
        own = own_boost > 0
        return torch.where(own, own_hint, hint), torch.where(own, own_boost, boost)

    def observe(self, tokens: Tensor, last: Tensor, salt: Tensor | None = None) -> None:
        """Add the scored positions `last` (1-D) to the counts: each with its context and the
        token after it."""
        keys, valid = context_keys(tokens, last, self.order, salt)
        ctx = torch.cat([self.pair_ctx, keys[valid]])
        tok = torch.cat([self.pair_tok, tokens[last[valid] + 1].long()])
        count = torch.cat([self.pair_count, torch.ones_like(keys[valid])])
        order = torch.sort(tok, stable=True).indices
        order = order[torch.sort(ctx[order], stable=True).indices]
        ctx, tok, count = ctx[order], tok[order], count[order]
        first = torch.ones_like(ctx, dtype=torch.bool)
        first[1:] = (ctx[1:] != ctx[:-1]) | (tok[1:] != tok[:-1])
        row = first.cumsum(0) - 1
        self.pair_ctx, self.pair_tok = ctx[first], tok[first]
        self.pair_count = torch.zeros_like(self.pair_ctx).index_add_(0, row, count)
        first = torch.ones_like(self.pair_ctx, dtype=torch.bool)
        first[1:] = self.pair_ctx[1:] != self.pair_ctx[:-1]
        group = first.cumsum(0) - 1
        self.ctx = self.pair_ctx[first]
        self.total = torch.zeros_like(self.ctx).index_add_(0, group, self.pair_count)
        self.top = torch.zeros_like(self.ctx).scatter_reduce_(0, group, self.pair_count, "amax")
        # Within a context the rows run by token, so the lowest id of the top count wins a tie.
        at_top = self.pair_count == self.top[group]
        self.top_tok = torch.full_like(self.ctx, torch.iinfo(torch.int64).max).scatter_reduce_(
            0, group, torch.where(at_top, self.pair_tok, torch.iinfo(torch.int64).max), "amin")

    @staticmethod
    def tilted_nll(logits: Tensor, targets: Tensor, hint: Tensor, boost: Tensor) -> Tensor:
        """The loss of `targets` under the tilted, renormalized distribution of `logits` (shape
        (..., vocab)): the cross-entropy, less the boost where the target is the hint, plus
        log Z, the hint's probability read through the log-sum-exp (the cross-entropy plus the
        target's logit). Where the boost is 0 it is the cross-entropy, bit for bit."""
        logits = logits.float()
        nll = F.cross_entropy(logits.flatten(0, -2), targets.flatten(), reduction="none")
        nll = nll.view_as(targets)
        lse = nll + logits.gather(-1, targets[..., None]).squeeze(-1)
        p_hint = torch.exp(logits.gather(-1, hint[..., None]).squeeze(-1) - lse)
        return nll - boost * (targets == hint) + torch.log1p(p_hint * torch.expm1(boost))

    @staticmethod
    def tilted_logits(logits: Tensor, hint: Tensor, boost: Tensor) -> Tensor:
        """The tilted logits themselves: their softmax is the distribution `tilted_nll` scores."""
        return logits.float().scatter_add(-1, hint[..., None], boost[..., None])
