"""Every hyperparameter of a run, in one frozen dataclass read once from the environment.

Names are the challenge's environment variables (`MATRIX_LR`, `NUM_LOOPS`, ...) with the defaults
the 2026-04-09 record ran (records/track_10min_16mb/2026-04-09_SP8192_3LayerRecur_ParResid_QK525_
LegalTTT), so a `train_gpt.py` user is at home: `NUM_LAYERS=9 torchrun ... train_gpt.py`. A preset
(`PRESET=baseline`) is a small set of overrides applied before the environment. Each field is
readable as `cfg.<lowercase name>`. A misspelled or unknown name, or a value of the wrong type,
stops the run at start with one line.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import time
from collections.abc import Mapping
from typing import Any

from trainer.challenge import TRAIN_BUDGET_MS
from trainer.errors import TrainerError
from trainer.extras import EXTRAS


def knob(default: Any, doc: str, choices: tuple[str, ...] = ()) -> Any:
    """A setting: its default, a one-line reason (shown by `pgolf train --list-settings`)."""
    return dataclasses.field(default=default, metadata={"doc": doc, "choices": choices})


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Config:
    # ---- run and data ----------------------------------------------------------------------
    preset: str = knob("record", "Overrides applied before the environment: record (the 2026-04-09 "
                       "stack), frontier (record + the 2026-04-27 record's gates, LQER, "
                       "quantization groups, two lanes and LoRA TTT, the n-gram tilt, progressive "
                       "context), baseline (the challenge's naive baseline shape), tiny (CPU tests, "
                       "demo).",
                       ("record", "frontier", "baseline", "tiny"))
    data_dir: str = knob("./data/", "Root of the challenge's data layout; DATA_PATH and TOKENIZER_PATH "
                         "default to datasets/fineweb10B_sp{VOCAB_SIZE}/ and "
                         "tokenizers/fineweb_{VOCAB_SIZE}_bpe.model under it.")
    data_path: str = knob("", "Folder of fineweb_train_*.bin and fineweb_val_*.bin token shards.")
    tokenizer_path: str = knob("", "SentencePiece model the shards were made with; it must have "
                               "VOCAB_SIZE pieces (bytes per token come from it).")
    out_dir: str = knob(".", "Run folder: rank 0 writes train.log, final_model.pt and the export's "
                        "artifact here.")
    run_id: str = knob("", "Name of the run in the log; default: the UTC start time.")
    seed: int = knob(1337, "Seeds the weights and the order of training sequences.")

    # ---- length and batch ------------------------------------------------------------------
    iterations: int = knob(20000, "Most optimizer steps; with MAX_WALLCLOCK_SECONDS=0 also the "
                           "length of the schedule.")
    max_wallclock_seconds: float = knob(TRAIN_BUDGET_MS / 1000, "Cap on training time (validation "
                                        "excluded), the challenge's 600 s; 0 = run ITERATIONS steps.")
    warmup_steps: int = knob(20, "Untimed steps that compile each graph (looping off, then on); "
                             "weights, optimizer state and data order are restored after them.")
    train_batch_tokens: int = knob(786432, "Tokens per optimizer step over all ranks; the "
                                   "accumulation steps (8 / WORLD_SIZE) keep it the same on 1-8 GPUs.")
    train_seq_len: int = knob(2048, "Tokens per training sequence.")
    train_seq_schedule: str = knob("", "Progressive context (PR #2014): LEN@FRAC,... trains at each "
                                   "LEN until FRAC of the run, then at TRAIN_SEQ_LEN; each LEN "
                                   "divides TRAIN_SEQ_LEN (its windows are cut). Empty = off.")
    val_batch_tokens: int = knob(524288, "Tokens per validation pass over all ranks and accumulation "
                                 "steps, as the records split it.")
    val_loss_every: int = knob(4000, "Validate every N steps and at the last step; 0 = only at the end.")
    train_log_every: int = knob(500, "Log the training loss every N steps (and steps 1-5 and the last).")
    loader_prefetch: int = knob(2, "Batches a background thread prepares ahead in pinned memory "
                                "(PRs #785, #1532); 0 = load each batch when it is needed.")

    # ---- model -----------------------------------------------------------------------------
    vocab_size: int = knob(8192, "Tokenizer pieces; the embedding has one row per piece.")
    num_layers: int = knob(11, "Physical transformer blocks.")
    model_dim: int = knob(512, "Width of the residual stream.")
    num_heads: int = knob(8, "Query heads.")
    num_kv_heads: int = knob(4, "Key/value heads (grouped-query attention).")
    mlp_mult: float = knob(4.0, "MLP hidden width as a multiple of MODEL_DIM (4x from PR #1218).")
    leaky_relu_slope: float = knob(0.5, "Negative slope of the MLP's squared LeakyReLU (PR #493); "
                                   "0 gives the baseline's relu^2.")
    tie_embeddings: bool = knob(True, "Use the token embedding as the output head.")
    tied_embed_init_std: float = knob(0.005, "Std of the normal init of the tied embedding.")
    logit_softcap: float = knob(30.0, "Logits become c*tanh(z/c) with this c.")
    ortho_init: bool = knob(True, "Orthogonal init of block matrices at least 64x64; output "
                            "projections start at zero either way.")
    rope_base: float = knob(10000.0, "Rotary base frequency.")
    rope_dims: int = knob(16, "Rotary dimensions per head (partial RoPE, PR #315); 0 = all.")
    rope_train_seq_len: int = knob(2048, "Context the rotary base is set for; a longer context "
                                   "rescales the base (NTK).")
    qk_gain_init: float = knob(5.25, "Initial learned per-head query gain after q/k RMSNorm (the "
                               "record ran 5.25; its script's default was 5.0).")
    xsa_last_n: int = knob(11, "Exclusive self-attention (arXiv:2603.09078) on the last N layers; "
                           "11 = all (PR #478).")
    ln_scale: bool = knob(True, "Scale each block's normalized input by 1/sqrt(layer+1) (PR #315).")
    skip_gates_enabled: bool = knob(True, "Sigmoid gates on the U-Net skip connections (PR #1089).")
    num_loops: int = knob(2, "Extra passes over layers LOOP_START..LOOP_END once looping is on "
                          "(depth recurrence, PR #1204, 3 layers from PR #1493); 0 = none.")
    loop_start: int = knob(3, "First looped layer.")
    loop_end: int = knob(5, "Last looped layer (inclusive).")
    enable_looping_at: float = knob(0.35, "Fraction of the training budget after which the loops run.")
    parallel_residual_start: int = knob(7, "First layer whose attention and MLP both read the block "
                                        "input (GPT-J style parallel residual, PR #1204); -1 = none.")
    parallel_lanes: bool = knob(False, "From PARALLEL_RESIDUAL_START, two lanes (PR #1855): "
                                "attention reads one, the MLP the other, both write both through "
                                "learned weights; the head reads their mean.")
    attn_backend: str = knob("auto", "Attention kernel; auto picks the first that runs here of "
                             "FlashAttention 3, 4, 2 and PyTorch SDPA (cuDNN, else flash).",
                             ("auto", "fa3", "fa4", "fa2", "sdpa_cudnn", "sdpa_flash", "sdpa"))
    doc_mask: bool = knob(False, "Attention stays inside documents (a new one at every BOS), as the "
                          "records from 2026-04-10; FlashAttention 4 runs it as packed varlen "
                          "attention, other kernels with a dense mask (slower).")
    mlp_kernel: str = knob("auto", "MLP GEMMs in training and TTT: quack fuses LeakyReLU(0.5)^2 and its "
                           "derivative into the GEMM epilogues, and the residual add into the MLP's "
                           "and the attention's projections (Hopper); auto takes it where it runs, "
                           "torch = cuBLAS and compiled elementwise kernels.", ("auto", "quack", "torch"))
    compile: bool = knob(True, "torch.compile the model (fullgraph) on CUDA.")
    smear_gate_enabled: bool = knob(False, "SmearGate: each token's embedding adds a gated share of "
                                    "the previous token's, never across a BOS (PRs #1667, #1855).")
    sparse_attn_gate_enabled: bool = knob(False, "Scale each attention head's output by a sigmoid "
                                          "gate read from the first GATE_WINDOW input dims (PR #1787).")
    sparse_attn_gate_scale: float = knob(0.5, "Multiplier of the sparse attention gate's logit "
                                         "(0.5 in PR #1855).")
    gate_window: int = knob(12, "Leading residual dims read by SmearGate and the sparse attention "
                            "gate.")

    # ---- optimizer -------------------------------------------------------------------------
    optimizer_graph: bool = knob(True, "On one GPU, replay the optimizer step (clipping, Muon, AdamW, "
                                 "zeroing the gradients) as one CUDA graph instead of ~260 launches.")
    matrix_lr: float = knob(0.022, "Muon learning rate of the block matrices.")
    scalar_lr: float = knob(0.02, "AdamW learning rate of gains, mixes and skip weights.")
    tied_embed_lr: float = knob(0.03, "AdamW learning rate of the tied embedding.")
    embed_lr: float = knob(0.6, "AdamW learning rate of an untied embedding.")
    head_lr: float = knob(0.008, "Adam learning rate of an untied output head.")
    muon_momentum: float = knob(0.99, "Muon momentum after its warmup.")
    muon_momentum_warmup_start: float = knob(0.92, "Muon momentum at step 0.")
    muon_momentum_warmup_steps: int = knob(1500, "Steps of the linear momentum warmup.")
    muon_backend_steps: int = knob(5, "Newton-Schulz iterations per update.")
    muon_ns_coeffs: str = knob("classic", "Newton-Schulz coefficients: classic (3.4445, -4.775, "
                               "2.0315) or polar_express (per-iteration, arXiv:2505.16932, PR #1344).",
                               ("classic", "polar_express"))
    muon_row_normalize: bool = knob(True, "MuonEq-R: normalize update rows before Newton-Schulz "
                                    "(PR #1260).")
    muon_wd: float = knob(0.095, "Decoupled weight decay of the Muon matrices (scaled by the LR).")
    embed_wd: float = knob(0.085, "AdamW weight decay of the embedding.")
    adam_wd: float = knob(0.02, "AdamW weight decay of the scalar parameters.")
    beta1: float = knob(0.9, "Adam beta1.")
    beta2: float = knob(0.95, "Adam beta2.")
    adam_eps: float = knob(1e-8, "Adam epsilon.")
    grad_clip_norm: float = knob(0.3, "Clip the global gradient norm to this; 0 = off.")

    # ---- schedule and averaging ------------------------------------------------------------
    warmdown_frac: float = knob(0.72, "Final fraction of the budget over which the LR falls "
                                "linearly to MIN_LR.")
    min_lr: float = knob(0.0, "Floor of the LR multiplier during warmdown.")
    ema_decay: float | None = knob(None, "Per-step decay of the weight EMA used for export; 0 = off; "
                                   "unset = 0.9965 (tuned for ~4,550 steps) rescaled to the steps "
                                   "this run is measured to fit.")

    # ---- export and evaluation (read by trainer.export) ------------------------------------
    prequant_only: bool = knob(False, "Stop after the pre-quantization evaluation: no export.")
    gptq_enabled: bool = knob(True, "Quantize with full-Hessian GPTQ (else round to nearest).")
    gptq_reserve_seconds: float = knob(12.0, "Seconds taken from the training budget so Hessian "
                                       "collection on training data ends inside it.")
    gptq_calibration_batches: int = knob(64, "Training batches the Hessians are collected on.")
    matrix_bits: int = knob(6, "Bits per quantized block-matrix weight.")
    embed_bits: int = knob(8, "Bits per quantized embedding weight.")
    matrix_clip_sigmas: float = knob(12.85, "Block-matrix clip as row standard deviations (SDClip).")
    mlp_clip_sigmas: float | None = knob(None, "Clip of the MLP matrices; unset = MATRIX_CLIP_SIGMAS.")
    attn_clip_sigmas: float | None = knob(None, "Clip of the attention matrices; unset = "
                                          "MATRIX_CLIP_SIGMAS.")
    embed_clip_sigmas: float = knob(20.0, "Embedding clip as row standard deviations (SDClip).")
    lqer_enabled: bool = knob(False, "LQER: store a low-rank correction of the quantization error "
                              "of the LQER_TOP_K worst quantized matrices (PR #1797).")
    lqer_rank: int = knob(4, "Rank of each LQER correction.")
    lqer_top_k: int = knob(3, "Matrices corrected, largest quantization error first.")
    lqer_group: int = knob(64, "Entries per fp16 scale of LQER's int4 right factor.")
    awq_groups: int = knob(0, "AWQ-lite: groups of AWQ_GROUP_SIZE input columns, the most salient "
                           "of all GPTQ matrices, quantized at AWQ_BITS (PR #1908); 0 = off.")
    awq_group_size: int = knob(64, "Adjacent input columns per AWQ-lite group.")
    awq_bits: int = knob(8, "Bits of the AWQ-lite groups' weights.")
    compressor: str = knob("brotli", "Compressor of the quantized model: brotli, lzma, rans (the "
                           "levels entropy-coded per matrix, the rest lzma) or best (the smaller "
                           "of brotli and lzma on a sample).", ("brotli", "lzma", "rans", "best"))
    eval_seq_len: int = knob(2048, "Tokens per evaluation window.")
    eval_stride: int = knob(64, "Sliding-window evaluation stride.")
    sliding_window_enabled: bool = knob(True, "Score the quantized model with sliding windows.")
    ttt_enabled: bool = knob(True, "Score-first test-time training on the validation stream.")
    ttt_lr: float = knob(0.005, "SGD learning rate of test-time training.")
    ttt_epochs: int = knob(3, "Passes over each scored chunk.")
    ttt_momentum: float = knob(0.9, "SGD momentum of test-time training.")
    ttt_chunk_tokens: int = knob(32768, "Validation tokens per test-time training chunk.")
    ttt_grad_clip: float = knob(1.0, "Gradient-norm clip of test-time training.")
    ttt_batch_seqs: int = knob(32, "Sequences per test-time training batch over all ranks.")
    ttt_mode: str = knob("sgd", "sgd: the whole model trains on each scored chunk of the stream; "
                         "lora: each document gets its own LoRA adapters, trained on its chunks "
                         "as they are scored, and the whole model takes TTT_PHASES SGD passes on "
                         "the scored prefix (PRs #1855, #1953; trainer/doc_ttt.py).",
                         ("sgd", "lora"))
    ttt_lora_rank: int = knob(80, "Rank of the per-document LoRA adapters (TTT_MODE=lora).")
    ttt_lora_lr: float = knob(7.5e-5, "Adam learning rate of the per-document adapters.")
    ttt_lora_chunk_tokens: int = knob(48, "Positions of a document scored, then trained on, per "
                                      "adapter step.")
    ttt_lora_batch_docs: int = knob(64, "Documents adapted side by side, each with its own "
                                    "adapters, per rank.")
    ttt_phases: int = knob(3, "SGD passes of the whole model on the scored prefix (TTT_MODE=lora), "
                           "each after a further share of TTT_PHASE_DOCS documents is scored; 0 = "
                           "adapters only.")
    ttt_phase_docs: int = knob(2500, "Documents at the start of the stream the SGD passes train on.")
    ngram_tilt_enabled: bool = knob(False, "Scoring only: tilt each scored distribution toward the "
                                    "next token an n-gram of the already-scored stream predicts, "
                                    "renormalized (PR #2135's token channel; trainer/ngram_tilt.py).")
    ngram_tilt_order: int = knob(16, "n of the tilt's n-gram: its context is the n-1 tokens up to "
                                 "the scored position.")
    ngram_tilt_threshold: float = knob(0.8, "Tilt only where the context's most frequent next token "
                                       "took at least this share of its scored occurrences.")
    ngram_tilt_boost: float = knob(2.625, "The hint's probability is multiplied by e^boost before "
                                   "the distribution is renormalized.")

    def __post_init__(self) -> None:
        if EXTRAS:  # `pgolf train` validated the settings before launching
            _validate(self)


# A preset is a few overrides with their reasons, never a copy of the whole config.
PRESETS: dict[str, dict[str, Any]] = {
    # The field defaults are the 2026-04-09 record as it ran.
    "record": {},
    # The 2026-04-27 record's (PR #1855) techniques on the record stack: BOS-masked SmearGate,
    # the sparse attention gate, LQER, int7 embedding and per-group clips, the two-lane decoder;
    # and its settings for what pgolf shares with it (optimizer, schedule, calibration).
    "frontier": {
        "smear_gate_enabled": True, "sparse_attn_gate_enabled": True, "lqer_enabled": True,
        "embed_bits": 7, "embed_clip_sigmas": 14.0, "mlp_clip_sigmas": 11.5, "attn_clip_sigmas": 13.0,
        "matrix_lr": 0.026, "muon_momentum": 0.97, "muon_ns_coeffs": "polar_express", "beta2": 0.99,
        "warmdown_frac": 0.85, "min_lr": 0.1, "qk_gain_init": 5.0,
        "gptq_calibration_batches": 16,
        "doc_mask": True,                           # its varlen attention within documents
        "gptq_reserve_seconds": 8.0,                # PR #1868's re-run: Hessians end inside 600 s
        "compressor": "rans",                       # in place of its per-group lrzip (docs/export.md)
        # Its two-lane decoder from layer 8: -0.0106 bpb after TTT on one H200 (docs/benchmarks.md).
        "parallel_lanes": True, "parallel_residual_start": 8,
        # Its per-document LoRA TTT with phased SGD, and no sliding-window pass (its evaluation has
        # none): 0.017 bpb below whole-model SGD TTT on the same artifact, the evaluation inside
        # the budget scaled to the validation set (docs/benchmarks.md).
        "ttt_mode": "lora", "sliding_window_enabled": False,
        # #2135's token n-gram tilt: -0.0037 bpb after LoRA TTT on one H100, the evaluation still
        # inside the budget scaled to the validation set (docs/benchmarks.md).
        "ngram_tilt_enabled": True,
        # #2014's progressive context, 1,024 tokens for the first tenth of training: -0.0028 bpb
        # after LoRA TTT on one H100 for 436 bytes of code, the evaluation unchanged
        # (docs/benchmarks.md).
        "train_seq_schedule": "1024@0.1",
    },
    # The challenge's naive baseline (root train_gpt.py; records/.../2026-03-17_NaiveBaseline).
    "baseline": {
        "vocab_size": 1024, "num_layers": 9, "mlp_mult": 2.0,
        "leaky_relu_slope": 0.0,                    # relu^2
        "train_seq_len": 1024, "eval_seq_len": 1024, "rope_train_seq_len": 1024,
        "train_batch_tokens": 524288,
        "rope_dims": 0, "qk_gain_init": 1.5, "xsa_last_n": 0, "ln_scale": False,
        "skip_gates_enabled": False, "num_loops": 0, "parallel_residual_start": -1,
        "ortho_init": False,
        "matrix_lr": 0.04, "scalar_lr": 0.04, "tied_embed_lr": 0.05,
        "muon_momentum": 0.95, "muon_momentum_warmup_start": 0.85, "muon_momentum_warmup_steps": 500,
        "muon_row_normalize": False, "muon_wd": 0.0, "embed_wd": 0.0, "adam_wd": 0.0,
        "grad_clip_norm": 0.0, "ema_decay": 0.0,
        "warmdown_frac": 0.087,                     # WARMDOWN_ITERS=1200 of its 13,780 steps
        "val_loss_every": 1000, "train_log_every": 200,
        # It exported int8 + zlib by rounding, evaluated without sliding windows or TTT.
        "gptq_enabled": False, "gptq_reserve_seconds": 0.0, "matrix_bits": 8,
        "sliding_window_enabled": False, "ttt_enabled": False,
    },
    # Seconds on two CPU cores with the embedded sample corpus and its 1024-piece tokenizer;
    # every component of the record stays switched on, at toy sizes.
    "tiny": {
        "vocab_size": 1024, "num_layers": 6, "model_dim": 64, "num_heads": 4, "num_kv_heads": 2,
        "rope_dims": 4,                             # a quarter of the head, as 16 of 64
        "loop_start": 2, "loop_end": 3, "parallel_residual_start": 4,
        "train_seq_len": 128, "eval_seq_len": 128, "rope_train_seq_len": 128,
        "train_batch_tokens": 4096, "val_batch_tokens": 16384,
        "iterations": 60, "max_wallclock_seconds": 0.0,   # step-based, so runs are reproducible
        "warmup_steps": 2, "val_loss_every": 0, "train_log_every": 10,
        "muon_momentum_warmup_steps": 20, "compile": False,
        "matrix_lr": 0.04, "tied_embed_lr": 0.1,    # a 60-step run needs larger steps
        "gptq_reserve_seconds": 0.0, "gptq_calibration_batches": 4,
        "eval_stride": 32, "ttt_chunk_tokens": 2048, "ttt_epochs": 1, "ttt_batch_seqs": 4,
    },
}

# Settings that differ between the runs of one submission (its seeds, their folders and the
# data's place on each machine): a record bundle never folds them, so every seed runs one file.
PER_RUN = frozenset({"seed", "run_id", "out_dir", "data_dir", "data_path", "tokenizer_path"})

# Settings a record bundle was built for (trainer.bundle fills it in the bundle it writes): the
# code their other values would run is not in that file, so another value stops the run.
PINNED: dict[str, Any] = {}

# Words common in unrelated environment variables. The other leading words of our names (TTT,
# GPTQ, MUON, ...) belong to this trainer: an unknown name containing one is a typo or a knob of
# another script (PHASED_TTT_ENABLED, WARMDOWN_ITERS), and it stops the run instead of being ignored.
_SHARED_WORDS = {"MAX", "MIN", "NUM", "ENABLE", "DATA", "RUN", "OUT", "MODEL", "HEAD", "TRAIN",
                 "VAL", "EVAL", "GRAD", "SKIP", "PARALLEL"}


def fields() -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(Config)


def env_name(field_name: str) -> str:
    return field_name.upper()


def load_config(env: Mapping[str, str] | None = None,
                overrides: Mapping[str, str] | None = None) -> Config:
    """The run's config: field defaults, then the preset, then `env`, then `overrides`.

    `env` defaults to os.environ; `overrides` are `NAME=value` strings from the command line
    (their names must match exactly). Values are parsed by the field's type.
    """
    env = os.environ if env is None else env
    by_name = {env_name(f.name): f for f in fields()}
    given: dict[str, str] = {}
    for name, text in env.items():
        if name in by_name:
            given[name] = text
        elif EXTRAS:
            _reject_lookalike(name, by_name)
    if EXTRAS:  # overrides come from pgolf, which runs the package
        for name, text in (overrides or {}).items():
            key = name.upper()
            if key not in by_name:
                raise TrainerError(f"unknown setting {name}{_suggest(key, by_name)}")
            given[key] = text
    values = {by_name[name].name: parse_value(by_name[name], text) for name, text in given.items()}
    # A record bundle holds its own preset only: with another, the pin below stops the run.
    merged = {**PRESETS.get(values.get("preset", "record"), {}), **values}
    cfg = _derive_paths(Config(**merged))
    for name, value in PINNED.items():
        if getattr(cfg, name) != value:
            raise TrainerError(f"{env_name(name)}={format_value(getattr(cfg, name))}: this "
                               f"train_gpt.py was built for {format_value(value)} and holds only "
                               "that code; pgolf train builds one for these settings")
    return cfg


def record_settings(cfg: Config) -> dict[str, Any]:
    """The settings a record bundle may fold in: all but those that differ between seeds."""
    return {f.name: getattr(cfg, f.name) for f in fields() if f.name not in PER_RUN}


def parse_value(field: dataclasses.Field, text: str) -> Any:
    """One setting from its text: ints, floats, 0/1 or true/false booleans, strings, `auto`."""
    name, kind, text = env_name(field.name), str(field.type), text.strip()
    if kind == "float | None" and text.lower() in ("", "auto", "none"):
        return None
    try:
        if kind == "bool":
            return {"1": True, "true": True, "yes": True,
                    "0": False, "false": False, "no": False}[text.lower()]
        if kind == "int":
            return int(text)
        if kind in ("float", "float | None"):
            return float(text)
    except (KeyError, ValueError):
        expected = {"bool": "0 or 1", "int": "an integer"}.get(kind, "a number")
        raise TrainerError(f"{name}={text!r}: expected {expected}") from None
    if EXTRAS and field.metadata["choices"] and text not in field.metadata["choices"]:
        raise TrainerError(f"{name}={text!r}: expected one of {', '.join(field.metadata['choices'])}")
    return text


def format_value(value: Any) -> str:
    return "auto" if value is None else str(value)


def hyperparameter_lines(cfg: Config) -> list[str]:
    """The `Hyperparameters:` block of the log, one `  name: value` line per field."""
    return ["Hyperparameters:"] + [f"  {f.name}: {format_value(getattr(cfg, f.name))}"
                                   for f in fields()]


def _reject_lookalike(name: str, by_name: Mapping[str, dataclasses.Field]) -> None:
    ours = {n.split("_")[0] for n in by_name if "_" in n} - _SHARED_WORDS
    close = difflib.get_close_matches(name, by_name, n=1, cutoff=0.88)
    if ("_" in name and ours.intersection(name.split("_"))) or close:
        raise TrainerError(f"unknown setting {name} in the environment{_suggest(name, by_name)}")


def _suggest(name: str, by_name: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(name, by_name, n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else " (pgolf train --list-settings)"


def _derive_paths(cfg: Config) -> Config:
    root = cfg.data_dir
    derived = {
        "data_path": cfg.data_path or os.path.join(root, "datasets", f"fineweb10B_sp{cfg.vocab_size}"),
        "tokenizer_path": cfg.tokenizer_path
        or os.path.join(root, "tokenizers", f"fineweb_{cfg.vocab_size}_bpe.model"),
        "run_id": cfg.run_id or time.strftime("%Y%m%d-%H%M%S", time.gmtime()),
    }
    return dataclasses.replace(cfg, **derived)


def _validate(cfg: Config) -> None:
    head_dim = cfg.model_dim // cfg.num_heads if cfg.num_heads > 0 else 0
    rules = [
        (cfg.num_heads > 0 and cfg.model_dim % cfg.num_heads == 0,
         f"MODEL_DIM={cfg.model_dim} must be a multiple of NUM_HEADS={cfg.num_heads}"),
        (cfg.num_kv_heads > 0 and cfg.num_heads % cfg.num_kv_heads == 0,
         f"NUM_HEADS={cfg.num_heads} must be a multiple of NUM_KV_HEADS={cfg.num_kv_heads}"),
        (head_dim % 2 == 0, f"the head dimension {head_dim} must be even for RoPE"),
        (cfg.rope_dims % 2 == 0 and 0 <= cfg.rope_dims <= head_dim,
         f"ROPE_DIMS={cfg.rope_dims} must be even and at most the head dimension {head_dim}"),
        (1 <= cfg.vocab_size <= 65536, f"VOCAB_SIZE={cfg.vocab_size} must fit uint16 shards"),
        (cfg.num_layers >= 1, "NUM_LAYERS must be at least 1"),
        (cfg.num_loops == 0 or 0 <= cfg.loop_start <= cfg.loop_end < cfg.num_layers,
         f"LOOP_START={cfg.loop_start}..LOOP_END={cfg.loop_end} must lie inside the "
         f"{cfg.num_layers} layers"),
        (cfg.num_loops >= 0, "NUM_LOOPS must be 0 or more"),
        (all(0.0 <= v <= 1.0 for v in (cfg.enable_looping_at, cfg.warmdown_frac, cfg.min_lr)),
         "ENABLE_LOOPING_AT, WARMDOWN_FRAC and MIN_LR must lie in [0, 1]"),
        (cfg.ema_decay is None or 0.0 <= cfg.ema_decay < 1.0, "EMA_DECAY must lie in [0, 1)"),
        (cfg.logit_softcap > 0, "LOGIT_SOFTCAP must be positive"),
        (min(cfg.train_seq_len, cfg.eval_seq_len, cfg.train_batch_tokens, cfg.val_batch_tokens,
             cfg.muon_backend_steps, cfg.iterations) > 0,
         "sequence lengths, batch sizes, MUON_BACKEND_STEPS and ITERATIONS must be positive"),
        (cfg.max_wallclock_seconds == 0 or cfg.gptq_reserve_seconds < cfg.max_wallclock_seconds,
         f"GPTQ_RESERVE_SECONDS={cfg.gptq_reserve_seconds} leaves no training time in "
         f"MAX_WALLCLOCK_SECONDS={cfg.max_wallclock_seconds}"),
        (0 < cfg.gate_window <= cfg.model_dim,
         f"GATE_WINDOW={cfg.gate_window} must lie in 1..MODEL_DIM={cfg.model_dim}"),
        (not cfg.parallel_lanes or (0 <= cfg.parallel_residual_start < cfg.num_layers and (
            cfg.num_loops == 0 or cfg.parallel_residual_start > cfg.loop_end)),
         f"PARALLEL_LANES=1 needs PARALLEL_RESIDUAL_START={cfg.parallel_residual_start} to name a "
         f"layer after the looped ones (LOOP_END={cfg.loop_end}) and before {cfg.num_layers}: "
         "the lanes run to the last layer"),
        (cfg.lqer_rank > 0 and cfg.lqer_top_k >= 0 and cfg.lqer_group > 0,
         "LQER_RANK and LQER_GROUP must be positive, LQER_TOP_K 0 or more"),
        (cfg.awq_groups == 0 or (cfg.awq_groups > 0 and cfg.awq_group_size > 0
                                 and cfg.matrix_bits < cfg.awq_bits <= 8),
         f"AWQ_GROUPS must be 0 or more, AWQ_GROUP_SIZE positive, and AWQ_BITS={cfg.awq_bits} above "
         f"MATRIX_BITS={cfg.matrix_bits} and at most 8"),
        (cfg.loader_prefetch >= 0 and cfg.warmup_steps >= 0, "LOADER_PREFETCH and WARMUP_STEPS "
         "must be 0 or more"),
        (min(cfg.ttt_lora_rank, cfg.ttt_lora_chunk_tokens, cfg.ttt_lora_batch_docs) > 0,
         "TTT_LORA_RANK, TTT_LORA_CHUNK_TOKENS and TTT_LORA_BATCH_DOCS must be positive"),
        (cfg.ttt_mode != "lora" or cfg.ttt_lora_chunk_tokens <= cfg.eval_seq_len,
         f"TTT_LORA_CHUNK_TOKENS={cfg.ttt_lora_chunk_tokens} must fit in EVAL_SEQ_LEN="
         f"{cfg.eval_seq_len}"),
        (cfg.ttt_phases >= 0 and cfg.ttt_phase_docs >= 0, "TTT_PHASES and TTT_PHASE_DOCS must "
         "be 0 or more"),
        (cfg.ngram_tilt_order >= 2 and 0 < cfg.ngram_tilt_threshold <= 1 and cfg.ngram_tilt_boost >= 0,
         "NGRAM_TILT_ORDER must be 2 or more, NGRAM_TILT_THRESHOLD in (0, 1], NGRAM_TILT_BOOST 0 "
         "or more"),
    ]
    for ok, message in rules:
        if not ok:
            raise TrainerError(message)
    if cfg.train_seq_schedule:
        seq_stages(cfg)  # raises on a malformed schedule


def seq_stages(cfg: Config) -> list[tuple[float, int]]:
    """TRAIN_SEQ_SCHEDULE as (progress until which it applies, sequence length), ascending,
    ending with (1.0, TRAIN_SEQ_LEN). At most two stages before it: with looping on and off and
    the evaluation's graph, three lengths fill torch.compile's eight graphs per function."""
    stages = []
    for item in filter(None, (part.strip() for part in cfg.train_seq_schedule.split(","))):
        length, _, until = item.partition("@")
        try:
            stages.append((float(until), int(length)))
        except ValueError:
            raise TrainerError(f"TRAIN_SEQ_SCHEDULE: {item!r} is not LEN@FRAC "
                               f"(for example 512@0.1,1024@0.7)") from None
    fracs = [f for f, _ in stages]
    if fracs != sorted(set(fracs)) or not all(0.0 < f < 1.0 for f in fracs):
        raise TrainerError(f"TRAIN_SEQ_SCHEDULE={cfg.train_seq_schedule!r}: the fractions must "
                           f"rise strictly inside (0, 1)")
    if any(n <= 0 or n >= cfg.train_seq_len or cfg.train_seq_len % n for _, n in stages):
        raise TrainerError(f"TRAIN_SEQ_SCHEDULE={cfg.train_seq_schedule!r}: each length must be "
                           f"shorter than TRAIN_SEQ_LEN={cfg.train_seq_len} and divide it "
                           f"(TRAIN_SEQ_SCHEDULE= trains at TRAIN_SEQ_LEN throughout)")
    if len(stages) > 2:
        raise TrainerError("TRAIN_SEQ_SCHEDULE: at most two stages before TRAIN_SEQ_LEN")
    return stages + [(1.0, cfg.train_seq_len)]
