"""The record's GPT (records/track_10min_16mb/2026-04-09_SP8192_3LayerRecur_ParResid_QK525_LegalTTT).

The baseline's U-Net transformer (root train_gpt.py: RMSNorm everywhere, q/k RMSNorm with a learned
per-head query gain, learned residual mixes with the embedding, tied embeddings, tanh logit softcap)
plus, each switchable from the config:
  partial RoPE and 1/sqrt(layer+1) input scaling (PR #315), squared LeakyReLU(0.5) MLP (PR #493),
  exclusive self-attention (arXiv:2603.09078; all layers from PR #478), sigmoid gates on the skips
  (PR #1089), depth recurrence over a block range (PR #1204; layers 3-5 from PR #1493), GPT-J style
  parallel residuals in the late layers (PR #1204), orthogonal init with zero-init output
  projections; SmearGate and the sparse attention gate (trainer/gates.py).
Parameter names match the records', so their state dicts load here and the reverse.
Weights stay fp32; on GPUs the run wraps the forward in bf16 autocast.
"""

from __future__ import annotations

import math

import torch
import torch._inductor.config as inductor_config
import torch.nn as nn
import torch.nn.functional as F

from trainer.attention import activate_backend, causal_attention, choose_backend, document_segments
from trainer.config import Config
from trainer.errors import TrainerError
from trainer.fa4 import kv_repeats
from trainer.gates import HeadGate, SmearGate
from trainer.mlp_gemm import fused_mlp, fused_mlp_problem
from trainer.qk_rope import apply_rope, qk_norm_rope
from trainer.residual_gemm import residual_gemm
from trainer.runlog import log
from trainer.softcap_ce import softcapped_cross_entropy
from trainer.xsa import exclusive_self_attention, fused_exclusive_self_attention



class RMSNorm(nn.Module):
    """Parameter-free RMS normalization over the last dimension."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.size(-1),))


class CastedLinear(nn.Linear):
    """Bias-free linear layer whose fp32 weight is cast to the input's dtype when used."""

    def __init__(self, in_features: int, out_features: int, zero_init: bool = False):
        super().__init__(in_features, out_features, bias=False)
        self.zero_init = zero_init  # output projections start at zero, so each block starts as identity

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight.to(x.dtype))


class Rotary(nn.Module):
    """cos/sin tables of rotary embeddings over the first `rope_dims` of each head."""

    def __init__(self, rope_dims: int, base: float, train_seq_len: int):
        super().__init__()
        self.rope_dims, self.base, self.train_seq_len = rope_dims, base, train_seq_len
        inv_freq = 1.0 / base ** (torch.arange(0, rope_dims, 2, dtype=torch.float32) / rope_dims)
        # Built once: computed inside the compiled forward, the tables were fused into every q/k
        # kernel and cos/sin recomputed per element in both passes (docs/benchmarks.md, "Against
        # the record script, kernel by kernel").
        cos, sin = rope_tables(train_seq_len, inv_freq)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, seq_len: int, device: torch.device,
                span: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The tables for `seq_len` positions. `span` (a 0-dim tensor): the positions the base is
        stretched for, from the formula with no branch on the width (LoRA TTT's pass, compiled
        once for windows of every width, padded past their tokens: the branch would split its
        graph in two, each a compile of the whole model)."""
        if span is not None:
            return self._stretched(seq_len, span.clamp(min=self.train_seq_len), device)
        if seq_len <= self.train_seq_len:
            return self.cos[:, :seq_len], self.sin[:, :seq_len]
        return self._stretched(seq_len, torch.full((), seq_len, device=device), device)

    def _stretched(self, seq_len: int, span: torch.Tensor, device: torch.device,
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """Tables with the base stretched for `span` positions (NTK-aware scaling, as the records'
        Rotary past the training length); unstretched where span is train_seq_len."""
        rd = self.rope_dims
        # The base as a tensor: from a symbolic width (LoRA TTT's pass) a Python float base would
        # be a symbolic float, which torch 2.11's inductor fails on ("'SymFloat' object has no
        # attribute 'size'") when it compiles the pass's backward.
        base = torch.full((), self.base, dtype=torch.float32, device=device)
        if rd > 2:
            base = base * (span.float() / self.train_seq_len) ** (rd / (rd - 2))
        inv_freq = 1.0 / base ** (torch.arange(0, rd, 2, dtype=torch.float32, device=device) / rd)
        return rope_tables(seq_len, inv_freq)


def rope_tables(seq_len: int, inv_freq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (1, T, 1, rd/2), fp32. Positions in fp32: the records built them in the
    model's bf16, which rounds positions above 256 to a multiple of 2 or more."""
    positions = torch.arange(seq_len, dtype=torch.float32, device=inv_freq.device)
    freqs = torch.outer(positions, inv_freq)
    return freqs.cos()[None, :, None, :], freqs.sin()[None, :, None, :]


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: Config, layer: int):
        super().__init__()
        dim, self.num_heads, self.num_kv_heads = cfg.model_dim, cfg.num_heads, cfg.num_kv_heads
        self.head_dim = dim // cfg.num_heads
        kv_dim = self.num_kv_heads * self.head_dim
        self.c_q = CastedLinear(dim, dim)
        self.c_k = CastedLinear(dim, kv_dim)
        self.c_v = CastedLinear(dim, kv_dim)
        self.proj = CastedLinear(dim, dim, zero_init=True)
        self.q_gain = nn.Parameter(torch.full((self.num_heads,), cfg.qk_gain_init))
        self.use_xsa = layer >= cfg.num_layers - cfg.xsa_last_n
        self.head_gate = (HeadGate(self.num_heads, cfg.gate_window, cfg.sparse_attn_gate_scale)
                          if cfg.sparse_attn_gate_enabled else None)
        self.backend = "sdpa"  # set for the whole model by GPT.set_attention_backend

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor],
                segments: torch.Tensor | None, k_lora: nn.Module | None = None) -> torch.Tensor:
        return self.proj(self.heads(x, rope, segments, k_lora))

    def heads(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor],
              segments: torch.Tensor | None, k_lora: nn.Module | None = None) -> torch.Tensor:
        """The heads' outputs side by side (B, T, dim): the attention before its projection."""
        B, T, _ = x.shape
        q = self.c_q(x).view(B, T, self.num_heads, self.head_dim)
        k = self.c_k(x) if k_lora is None else self.c_k(x) + k_lora(x)
        k = k.view(B, T, self.num_kv_heads, self.head_dim)
        v = self.c_v(x).view(B, T, self.num_kv_heads, self.head_dim)
        # With unit-norm q and k the gain sets the attention temperature (QK-gain, PR #1125).
        attn_v = v  # XSA below reads the grouped values
        if torch.is_grad_enabled():  # training and TTT: one kernel each way (trainer/qk_rope.py)
            # FA4 takes a key and value head per query head here (trainer/fa4.py says why).
            repeats = kv_repeats(self.backend, self.num_heads, self.num_kv_heads)
            q, k = qk_norm_rope(q, k, *rope, self.q_gain, repeats)
            if repeats > 1:
                attn_v = v.repeat_interleave(repeats, dim=2)
        else:  # scoring keeps the PyTorch ops, as for XSA below
            q, k = F.rms_norm(q, (self.head_dim,)), F.rms_norm(k, (self.head_dim,))
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
            q = q * self.q_gain.to(q.dtype)[None, None, :, None]
        y = causal_attention(q.to(v.dtype), k.to(v.dtype), attn_v, self.backend, segments)
        if self.use_xsa:
            # Training and TTT run the fused kernels (trainer/xsa.py). Scoring keeps the PyTorch
            # ops, whose compiled kernels give the per-token losses the evaluation benchmark
            # compares bit for bit across versions; the kernels round once in fp32, not per op.
            if torch.is_grad_enabled():
                y = fused_exclusive_self_attention(y, v)
            else:
                y = exclusive_self_attention(y, v)
        if self.head_gate is not None:
            y = self.head_gate(y, x)
        return y.reshape(B, T, -1)


class MLP(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        hidden = int(cfg.mlp_mult * cfg.model_dim)
        self.fc = CastedLinear(cfg.model_dim, hidden)
        self.proj = CastedLinear(hidden, cfg.model_dim, zero_init=True)
        self.negative_slope = cfg.leaky_relu_slope
        self.fused = False  # set for the whole model by GPT.set_mlp_kernel

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused and torch.is_grad_enabled() and self.fc.weight.requires_grad:
            # Training and TTT; scoring keeps the PyTorch ops, as for XSA below, and so does
            # LoRA TTT, whose frozen weights need no gradient (the fused backward computes them).
            return fused_mlp(x, self.fc.weight.to(x.dtype), self.proj.weight.to(x.dtype))
        return self.proj(self._hidden(x))

    def add_to(self, residual: torch.Tensor, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """residual + scale * self(x), the sum and the scale inside the down projection
        (scaled_residual); for training and TTT's steps, as the fused kernels."""
        w_proj = scaled_weight(self.proj, scale, x.dtype)
        if self.fused and self.fc.weight.requires_grad:
            return fused_mlp(x, self.fc.weight.to(x.dtype), w_proj, residual)
        return scaled_residual(residual, self._hidden(x), w_proj)

    def _hidden(self, x: torch.Tensor) -> torch.Tensor:
        # Squared LeakyReLU keeps a gradient for negative inputs, which relu^2 zeroes (PR #493).
        return F.leaky_relu(self.fc(x), self.negative_slope).square()


def scaled_weight(linear: CastedLinear, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """linear's weight with output channel j multiplied by scale[j], in `dtype`:
    scale * linear(x) is x @ scaled_weight.T."""
    return (linear.weight * scale[:, None]).to(dtype)


def scaled_residual(residual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                    quack: bool = False) -> torch.Tensor:
    """residual + x @ weight.T as one GEMM that adds the residual: addmm (on CUDA PyTorch first
    copies the residual into the output) or, with `quack`, one that reads it in its epilogue
    (trainer/residual_gemm.py). With a block's per-channel scale folded into the weight
    (scaled_weight), neither the projection's output nor its scaled copy is stored, and the
    backward needs neither (the scale's gradient comes through the weight's)."""
    residual2d, x2d = residual.reshape(-1, residual.size(-1)), x.reshape(-1, x.size(-1))
    out = residual_gemm(residual2d, x2d, weight) if quack else torch.addmm(residual2d, x2d, weight.t())
    return out.view_as(residual)


class Block(nn.Module):
    def __init__(self, cfg: Config, layer: int):
        super().__init__()
        dim = cfg.model_dim
        self.attn_norm, self.mlp_norm = RMSNorm(), RMSNorm()
        self.attn = CausalSelfAttention(cfg, layer)
        self.mlp = MLP(cfg)
        self.attn_scale = nn.Parameter(torch.ones(dim))
        self.mlp_scale = nn.Parameter(torch.ones(dim))
        # Learned mix of the running stream and the embedding output x0 (baseline).
        self.resid_mix = nn.Parameter(torch.stack((torch.ones(dim), torch.zeros(dim))))
        self.ln_scale_factor = 1.0 / math.sqrt(layer + 1) if cfg.ln_scale else 1.0
        self.parallel = 0 <= cfg.parallel_residual_start <= layer

    def forward(self, x: torch.Tensor, x0: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor],
                segments: torch.Tensor | None = None, lora: nn.Module | None = None) -> torch.Tensor:
        """`lora`: this layer's per-document adapters of test-time training (trainer/lora.py)."""
        mix = self.resid_mix.to(x.dtype)
        x = mix[0] * x + mix[1] * x0
        if lora is None and torch.is_grad_enabled():
            return self._forward_folded(x, rope, segments)
        attn_out = self._attend(self.attn_norm(x) * self.ln_scale_factor, rope, segments, lora)
        if self.parallel:  # attention and MLP both read the block input (GPT-J)
            mlp_out = self._mlp(self.mlp_norm(x) * self.ln_scale_factor, lora)
            return x + self.attn_scale.to(x.dtype) * attn_out + self.mlp_scale.to(x.dtype) * mlp_out
        x = x + self.attn_scale.to(x.dtype) * attn_out
        return x + self.mlp_scale.to(x.dtype) * self._mlp(self.mlp_norm(x) * self.ln_scale_factor, lora)

    def _forward_folded(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor],
                        segments: torch.Tensor | None) -> torch.Tensor:
        """forward's function with each residual add inside its projection (scaled_residual).
        Training and TTT's steps only: scoring and the Hessians' calibration, which hooks the
        projections' inputs, keep forward's modules, as for the fused kernels."""
        heads = self.attn.heads(self.attn_norm(x) * self.ln_scale_factor, rope, segments)
        # The attention's projection adds the residual on quack wherever the MLP runs on it.
        y = scaled_residual(x, heads, scaled_weight(self.attn.proj, self.attn_scale, x.dtype),
                            quack=self.mlp.fused)
        mlp_in = x if self.parallel else y  # parallel: the MLP reads the block input too
        return self.mlp.add_to(y, self.mlp_norm(mlp_in) * self.ln_scale_factor, self.mlp_scale)

    def forward_lanes(self, attn_lane: torch.Tensor, mlp_lane: torch.Tensor, x0: torch.Tensor,
                      rope: tuple[torch.Tensor, torch.Tensor], segments: torch.Tensor | None,
                      lora: nn.Module | None, resid: torch.Tensor,
                      post: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The block on two lanes (PARALLEL_LANES): attention reads its lane mixed with x0, the
        MLP reads its own; lane k keeps resid[k] of itself and adds post[0, k] of the attention's
        output and post[1, k] of the MLP's."""
        mix = self.resid_mix.to(attn_lane.dtype)
        h = mix[0] * attn_lane + mix[1] * x0
        a = self.attn_scale.to(h.dtype) * self._attend(self.attn_norm(h) * self.ln_scale_factor,
                                                       rope, segments, lora)
        m = self.mlp_scale.to(h.dtype) * self._mlp(self.mlp_norm(mlp_lane) * self.ln_scale_factor, lora)
        resid, post = resid.to(h.dtype), post.to(h.dtype)
        return (resid[0] * attn_lane + post[0, 0] * a + post[1, 0] * m,
                resid[1] * mlp_lane + post[0, 1] * a + post[1, 1] * m)

    def _attend(self, h, rope, segments, lora) -> torch.Tensor:
        if lora is None:
            return self.attn(h, rope, segments)
        return self.attn(h, rope, segments, lora.k) + lora.attn(h)

    def _mlp(self, h: torch.Tensor, lora) -> torch.Tensor:
        return self.mlp(h) if lora is None else self.mlp(h) + lora.mlp(h)


def layer_order(cfg: Config, looping: bool) -> tuple[list[int], list[int]]:
    """Physical block indices run by the encoder and decoder halves of the U-Net.

    With looping the block range LOOP_START..LOOP_END runs 1 + NUM_LOOPS times: the record's
    [0, 1, 2, 3, 4, 5, 3, 4] + [5, 3, 4, 5, 6, 7, 8, 9, 10], 17 virtual layers from 11.
    """
    order = list(range(cfg.num_layers))
    if looping and cfg.num_loops:
        loop = list(range(cfg.loop_start, cfg.loop_end + 1))
        order = order[: cfg.loop_start] + loop * (1 + cfg.num_loops) + order[cfg.loop_end + 1 :]
    half = len(order) // 2
    return order[:half], order[half:]


class GPT(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        dim = cfg.model_dim
        self.tok_emb = nn.Embedding(cfg.vocab_size, dim)
        self.smear_gate = SmearGate(cfg.gate_window) if cfg.smear_gate_enabled else None
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.num_layers))
        self.final_norm = RMSNorm()
        self.lm_head = None if cfg.tie_embeddings else CastedLinear(dim, cfg.vocab_size, zero_init=True)
        self.rotary = Rotary(cfg.rope_dims or dim // cfg.num_heads, cfg.rope_base,
                             cfg.rope_train_seq_len)
        self.logit_softcap = cfg.logit_softcap
        # Depth recurrence is switched on during training (ENABLE_LOOPING_AT); torch.compile
        # guards on this attribute, so both graphs are compiled in the warmup.
        self.looping_active = False
        self.plain_indices = layer_order(cfg, looping=False)
        self.encoder_indices, self.decoder_indices = layer_order(cfg, looping=True)
        num_skips = min(len(self.encoder_indices), len(self.decoder_indices))
        self.skip_weights = nn.Parameter(torch.ones(num_skips, dim))
        # sigmoid(0) = 0.5: each gated skip starts as the average of skip and stream.
        self.skip_gates = nn.Parameter(torch.zeros(num_skips, dim)) if cfg.skip_gates_enabled else None
        # PARALLEL_LANES' weights per layer, as PR #1855 starts them: each lane keeps 1.1 of
        # itself and takes all of both outputs.
        self.lane_resid = self.lane_post = None
        if cfg.parallel_lanes:
            self.lane_resid = nn.Parameter(torch.full((cfg.num_layers, 2), 1.1))
            self.lane_post = nn.Parameter(torch.ones(cfg.num_layers, 2, 2))
        self.attn_backend = "sdpa"
        self.doc_mask = cfg.doc_mask
        self._init_weights(cfg)

    def _init_weights(self, cfg: Config) -> None:
        if cfg.tie_embeddings:
            nn.init.normal_(self.tok_emb.weight, mean=0.0, std=cfg.tied_embed_init_std)
        for module in self.modules():
            if isinstance(module, CastedLinear):
                if module.zero_init:
                    nn.init.zeros_(module.weight)
                elif cfg.ortho_init and min(module.weight.shape) >= 64:
                    nn.init.orthogonal_(module.weight)

    def set_attention_backend(self, backend: str) -> None:
        self.attn_backend = backend
        for block in self.blocks:
            block.attn.backend = backend

    def set_mlp_kernel(self, kernel: str) -> None:
        for block in self.blocks:
            block.mlp.fused = kernel == "quack"

    def forward_logits(self, input_ids: torch.Tensor, adapters: nn.Module | None = None,
                       keep: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids (B, T) -> float32 logits (B, T, V), after the softcap. Test-time training's
        per-document `adapters` (trainer/lora.py) join in, one document per row, with `keep`:
        the window positions whose logits are returned (the head is the widest matrix), the
        last of them the window's last token; positions after it are padding."""
        logits = self._logits(input_ids, adapters, keep)
        return (self.logit_softcap * torch.tanh(logits / self.logit_softcap)).float()

    @property
    def takes_segment_bounds(self) -> bool:
        """Whether training hands forward FA4's segment bounds of its windows (TrainLoader), so
        the step needs no host sync to find the documents."""
        return self.doc_mask and self.attn_backend == "fa4"

    def forward(self, input_ids: torch.Tensor, target_ids: torch.Tensor,
                bounds: torch.Tensor | None = None) -> torch.Tensor:
        """Mean cross-entropy (nats) of predicting target_ids (B, T) from the softcapped logits;
        the softcap and the loss are one fused kernel each way on GPUs (trainer/softcap_ce.py).
        `bounds`: the windows' segment bounds (takes_segment_bounds), else found here."""
        logits = self._logits(input_ids, bounds=bounds)
        return softcapped_cross_entropy(logits.flatten(0, 1), target_ids.flatten(), self.logit_softcap)

    def _logits(self, input_ids: torch.Tensor, adapters: nn.Module | None = None,
                keep: torch.Tensor | None = None, bounds: torch.Tensor | None = None) -> torch.Tensor:
        """Logits before the softcap, in the compute dtype: bf16 under autocast, as the records'
        bf16 model, so the (B, T, V) tensor, the largest of the step, is never held in fp32."""
        x = self.tok_emb(input_ids)
        if torch.is_autocast_enabled(x.device.type):
            # The master embedding is fp32; without this cast the whole residual stream, and every
            # elementwise op of every block, would run in fp32.
            x = x.to(torch.get_autocast_dtype(x.device.type))
        if self.smear_gate is not None:
            x = self.smear_gate(x, input_ids)
        x = F.rms_norm(x, (x.size(-1),))
        x0 = x
        # Tables in the stream's dtype (q's and k's), as the records: fp32 tables would make the
        # rotation of every q and k element an fp32 round trip in both passes. With adapters this
        # is LoRA TTT's pass, compiled once for windows of every width (trainer/scoring.py): the
        # base is stretched for the window's tokens, not its padding.
        span = None if adapters is None else keep[-1] + 1
        rope = tuple(t.to(x.dtype) for t in self.rotary(input_ids.size(1), input_ids.device, span))
        encoder, decoder = ((self.encoder_indices, self.decoder_indices) if self.looping_active
                            else self.plain_indices)
        segments = None
        # A window of LoRA TTT holds one document's tokens (then padding): no mask to find, and
        # dense attention, with no host sync for the bounds.
        if self.doc_mask and adapters is None:
            segments = bounds if bounds is not None else document_segments(input_ids, self.attn_backend)
        lora = [None] * (len(encoder) + len(decoder)) if adapters is None else adapters.layers
        skips = []
        for j, i in enumerate(encoder):
            x = self.blocks[i](x, x0, rope, segments, lora[j])
            skips.append(x)
        lanes = None  # PARALLEL_LANES: (attention's, MLP's) from the first parallel layer on
        for j, i in enumerate(decoder):
            block, layer_lora = self.blocks[i], lora[len(encoder) + j]
            if lanes is None and self.lane_post is not None and block.parallel:
                lanes = (x, x)
            if skips:  # U-Net: decoder layer j reads the output of encoder layer -(j+1)
                skip = self.skip_weights[j].to(x.dtype) * skips.pop()
                if lanes is None:
                    x = self._join_skip(x, skip, j)
                else:  # into the attention's lane, as PR #1855
                    lanes = (self._join_skip(lanes[0], skip, j), lanes[1])
            if lanes is None:
                x = block(x, x0, rope, segments, layer_lora)
            else:
                lanes = block.forward_lanes(*lanes, x0, rope, segments, layer_lora,
                                            self.lane_resid[i], self.lane_post[i])
        if lanes is not None:
            x = 0.5 * (lanes[0] + lanes[1])
        if keep is not None:
            x = x.index_select(1, keep)
        x = self.final_norm(x)
        head = self.tok_emb.weight if self.lm_head is None else self.lm_head.weight
        logits = F.linear(x, head.to(x.dtype))
        return logits if adapters is None else logits + adapters.head(x)

    def _join_skip(self, x: torch.Tensor, skip: torch.Tensor, j: int) -> torch.Tensor:
        if self.skip_gates is None:
            return x + skip
        return torch.lerp(skip, x, torch.sigmoid(self.skip_gates[j]).to(x.dtype))


def build_model(cfg: Config, device: torch.device) -> tuple[GPT, str]:
    """The model on `device`, with the attention kernel chosen for it there and activated and
    the compiler set for it; returns it and the kernel as the log states it, `backend (why)`."""
    # Inductor's mix-order reductions fused the backward of a block's per-channel gains, a
    # norm and a skip gate into one kernel with ten accumulators per row block, many times
    # slower than separate kernels (docs/benchmarks.md, "Against the record script, kernel by
    # kernel").
    inductor_config.triton.mix_order_reduction = False
    model = GPT(cfg).to(device)
    backend, why = choose_backend(cfg.attn_backend, device, cfg.num_heads, cfg.num_kv_heads,
                                  cfg.model_dim // cfg.num_heads, compile=cfg.compile)
    activate_backend(backend)
    model.set_attention_backend(backend)
    mlp_kernel, mlp_why = choose_mlp_kernel(cfg, device)
    model.set_mlp_kernel(mlp_kernel)
    log(f"mlp_kernel:{mlp_kernel} ({mlp_why})")
    return model, f"{backend} ({why})"


def choose_mlp_kernel(cfg: Config, device: torch.device) -> tuple[str, str]:
    """(kernel, why): quack's fused epilogues where asked for or, for auto, where they run."""
    if cfg.mlp_kernel == "torch":
        return "torch", "MLP_KERNEL"
    problem = fused_mlp_problem(device, cfg.model_dim, int(cfg.mlp_mult * cfg.model_dim),
                                cfg.leaky_relu_slope)
    if problem is None:
        return "quack", "MLP_KERNEL" if cfg.mlp_kernel == "quack" else "quack installed"
    if cfg.mlp_kernel == "quack":
        raise TrainerError(f"MLP_KERNEL=quack cannot run here: {problem}; set MLP_KERNEL=auto "
                           "to fall back to the PyTorch kernels")
    return "torch", problem
