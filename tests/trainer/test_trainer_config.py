import dataclasses

import pytest

from audits.submission.logparse import parse_log
from trainer.config import PRESETS, Config, fields, hyperparameter_lines, load_config
from trainer.errors import TrainerError

# What the 2026-04-09 record logged in its Hyperparameters block (train_seed42.log).
RECORD_RUN = {
    "adam_eps": "1e-08", "adam_wd": "0.02", "beta1": "0.9", "beta2": "0.95", "compressor": "brotli",
    "embed_bits": "8", "embed_clip_sigmas": "20.0", "embed_lr": "0.6", "embed_wd": "0.085",
    "enable_looping_at": "0.35", "eval_seq_len": "2048", "eval_stride": "64",
    "gptq_calibration_batches": "64", "gptq_reserve_seconds": "12.0", "grad_clip_norm": "0.3",
    "head_lr": "0.008", "iterations": "20000", "ln_scale": "True", "logit_softcap": "30.0",
    "loop_end": "5", "loop_start": "3", "matrix_bits": "6", "matrix_clip_sigmas": "12.85",
    "matrix_lr": "0.022", "max_wallclock_seconds": "600.0", "min_lr": "0.0", "mlp_mult": "4.0",
    "model_dim": "512", "muon_backend_steps": "5", "muon_momentum": "0.99",
    "muon_momentum_warmup_start": "0.92", "muon_momentum_warmup_steps": "1500",
    "muon_row_normalize": "True", "muon_wd": "0.095", "num_heads": "8", "num_kv_heads": "4",
    "num_layers": "11", "num_loops": "2", "parallel_residual_start": "7", "qk_gain_init": "5.25",
    "rope_base": "10000.0", "rope_dims": "16", "rope_train_seq_len": "2048", "scalar_lr": "0.02",
    "seed": "1337", "skip_gates_enabled": "True", "sliding_window_enabled": "True",
    "tie_embeddings": "True", "tied_embed_init_std": "0.005", "tied_embed_lr": "0.03",
    "train_batch_tokens": "786432", "train_log_every": "500", "train_seq_len": "2048",
    "ttt_chunk_tokens": "32768", "ttt_enabled": "True", "ttt_epochs": "3", "ttt_lr": "0.005",
    "ttt_momentum": "0.9", "val_batch_tokens": "524288", "val_loss_every": "4000",
    "vocab_size": "8192", "warmdown_frac": "0.72", "warmup_steps": "20", "xsa_last_n": "11",
}

# The knobs the export and evaluation half reads, with the defaults agreed with it.
EXPORT_KNOBS = {
    "matrix_bits": 6, "embed_bits": 8, "matrix_clip_sigmas": 12.85, "embed_clip_sigmas": 20.0,
    "gptq_enabled": True, "gptq_calibration_batches": 64, "gptq_reserve_seconds": 12.0,
    "compressor": "brotli", "eval_seq_len": 2048, "eval_stride": 64, "sliding_window_enabled": True,
    "val_batch_tokens": 524288, "ttt_enabled": True, "ttt_lr": 0.005, "ttt_epochs": 3,
    "ttt_momentum": 0.9, "ttt_chunk_tokens": 32768, "ttt_grad_clip": 1.0, "ttt_batch_seqs": 32,
}


def test_defaults_are_the_record_as_it_ran():
    cfg = load_config({})
    for name, logged in RECORD_RUN.items():
        assert str(getattr(cfg, name)) == logged, name
    # Seed 1337 here; the record's log above is seed 42's, so check the seed separately.
    assert cfg.preset == "record" and cfg.ema_decay is None


def test_export_knobs_have_the_agreed_defaults():
    cfg = load_config({})
    assert {k: getattr(cfg, k) for k in EXPORT_KNOBS} == EXPORT_KNOBS


def test_every_setting_is_documented_and_flat():
    for f in fields():
        assert f.metadata["doc"].strip().endswith("."), f.name
        assert f.name == f.name.lower()


def test_environment_values_are_parsed_by_type():
    cfg = load_config({"NUM_LAYERS": "9", "MATRIX_LR": "0.05", "TTT_ENABLED": "0",
                       "LN_SCALE": "true", "EMA_DECAY": "0.99", "COMPRESSOR": "lzma"})
    assert (cfg.num_layers, cfg.matrix_lr, cfg.ttt_enabled, cfg.ln_scale) == (9, 0.05, False, True)
    assert cfg.ema_decay == 0.99 and cfg.compressor == "lzma"
    assert load_config({"EMA_DECAY": "auto"}).ema_decay is None


@pytest.mark.parametrize("env, message", [
    ({"NUM_LAYERS": "eleven"}, "NUM_LAYERS='eleven': expected an integer"),
    ({"NUM_LAYERS": "11.5"}, "NUM_LAYERS='11.5': expected an integer"),
    ({"MATRIX_LR": "fast"}, "MATRIX_LR='fast': expected a number"),
    ({"TIE_EMBEDDINGS": "2"}, "TIE_EMBEDDINGS='2': expected 0 or 1"),
    ({"COMPRESSOR": "zstd"}, "COMPRESSOR='zstd': expected one of brotli, lzma, rans, best"),
    ({"PRESET": "huge"}, "PRESET='huge': expected one of record, frontier, baseline, tiny"),
    ({"MATRX_LR": "0.1"}, "unknown setting MATRX_LR in the environment (did you mean MATRIX_LR"),
    ({"WARMDOWN_ITERS": "1200"}, "unknown setting WARMDOWN_ITERS"),
    ({"PHASED_TTT_ENABLED": "1"}, "unknown setting PHASED_TTT_ENABLED"),
    ({"NUM_HEADS": "7"}, "MODEL_DIM=512 must be a multiple of NUM_HEADS=7"),
    ({"LOOP_END": "11"}, "LOOP_START=3..LOOP_END=11 must lie inside the 11 layers"),
    ({"ROPE_DIMS": "15"}, "ROPE_DIMS=15 must be even"),
    ({"GPTQ_RESERVE_SECONDS": "700"}, "leaves no training time"),
    ({"AWQ_GROUPS": "1", "AWQ_BITS": "6"}, "AWQ_BITS=6 above MATRIX_BITS=6 and at most 8"),
    ({"TRAIN_SEQ_SCHEDULE": "1024"}, "TRAIN_SEQ_SCHEDULE: '1024' is not LEN@FRAC"),
    ({"TRAIN_SEQ_SCHEDULE": "1024@0.7,512@0.3"}, "the fractions must rise strictly inside (0, 1)"),
    ({"TRAIN_SEQ_SCHEDULE": "1000@0.5"}, "each length must be shorter than TRAIN_SEQ_LEN=2048 and "
                                         "divide it"),
    ({"TRAIN_SEQ_SCHEDULE": "256@0.1,512@0.2,1024@0.3"}, "at most two stages before TRAIN_SEQ_LEN"),
    # The frontier's schedule at a shorter context: the message says how to train without it.
    ({"PRESET": "frontier", "TRAIN_SEQ_LEN": "1024"}, "TRAIN_SEQ_SCHEDULE='1024@0.1': each length must "
     "be shorter than TRAIN_SEQ_LEN=1024 and divide it (TRAIN_SEQ_SCHEDULE= trains at TRAIN_SEQ_LEN "
     "throughout)"),
])
def test_bad_settings_stop_with_one_line(env, message):
    with pytest.raises(TrainerError) as info:
        load_config(env)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_unrelated_environment_is_ignored():
    env = {"PATH": "/usr/bin", "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "1",
           "NCCL_NET": "Socket", "TOKENIZERS_PARALLELISM": "false", "MAX_JOBS": "4",
           "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "PYTHONPATH": "."}
    cfg = load_config(env)  # run_id is the clock's second: read once, so both sides hold the same
    assert cfg == dataclasses.replace(load_config({}), run_id=cfg.run_id)


def test_command_line_overrides_win_and_must_be_exact():
    cfg = load_config({"SEED": "1"}, {"seed": "2", "NUM_LOOPS": "0"})
    assert cfg.seed == 2 and cfg.num_loops == 0
    with pytest.raises(TrainerError, match=r"unknown setting matrx_lr \(did you mean MATRIX_LR"):
        load_config({}, {"matrx_lr": "0.1"})


def test_presets_are_overrides_under_the_environment():
    tiny = load_config({"PRESET": "tiny"})
    assert (tiny.model_dim, tiny.vocab_size, tiny.compile) == (64, 1024, False)
    assert load_config({"PRESET": "tiny", "MODEL_DIM": "32", "NUM_HEADS": "2"}).model_dim == 32
    baseline = load_config({"PRESET": "baseline"})
    assert (baseline.num_layers, baseline.mlp_mult, baseline.leaky_relu_slope) == (9, 2.0, 0.0)
    for name, overrides in PRESETS.items():
        assert set(overrides) <= {f.name for f in fields()}, name


def test_data_paths_derive_from_data_dir_and_vocab():
    cfg = load_config({"DATA_DIR": "/d", "VOCAB_SIZE": "1024"})
    assert cfg.data_path == "/d/datasets/fineweb10B_sp1024"
    assert cfg.tokenizer_path == "/d/tokenizers/fineweb_1024_bpe.model"
    assert load_config({"DATA_PATH": "/x"}).data_path == "/x"


def test_config_is_frozen_and_keyword_only():
    cfg = load_config({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3
    with pytest.raises(TypeError):
        Config(1337)


def test_hyperparameter_block_parses_as_the_challenge_logs_it():
    cfg = load_config({"RUN_ID": "r1"})
    parsed = parse_log("\n".join(hyperparameter_lines(cfg)) + "\n")
    assert set(parsed.hparams) == {f.name for f in fields()}
    assert parsed.hparams["ema_decay"].value == "auto"
    assert parsed.seed.value == 1337
    assert parsed.dataset.value == "fineweb10B_sp8192"



# What the 2026-04-27 record (PR #1855) ran of the techniques the frontier preset adds: its
# command line and the Hyperparameters block of its seed-42 log.
RECORD_1855 = {
    "smear_gate_enabled": True, "sparse_attn_gate_enabled": True, "sparse_attn_gate_scale": 0.5,
    "gate_window": 12, "lqer_enabled": True, "lqer_rank": 4, "lqer_top_k": 3, "lqer_group": 64,
    "embed_bits": 7, "embed_clip_sigmas": 14.0, "mlp_clip_sigmas": 11.5, "attn_clip_sigmas": 13.0,
    "matrix_lr": 0.026, "muon_momentum": 0.97, "muon_ns_coeffs": "polar_express", "beta2": 0.99,
    "warmdown_frac": 0.85, "min_lr": 0.1, "qk_gain_init": 5.0, "gptq_calibration_batches": 16,
    "doc_mask": True, "parallel_lanes": True, "parallel_residual_start": 8,
}


def test_frontier_preset_is_the_record_plus_the_2026_04_27_techniques():
    record, frontier = load_config({}), load_config({"PRESET": "frontier"})
    assert {k: getattr(frontier, k) for k in RECORD_1855} == RECORD_1855
    changed = {f.name for f in fields() if getattr(record, f.name) != getattr(frontier, f.name)}
    assert changed - {"preset", "run_id"} == set(PRESETS["frontier"])
    # Its calibration ends inside the training budget, as the record's compliance re-run.
    assert frontier.gptq_reserve_seconds == 8.0
    # Off in the record preset: its runs are unchanged.
    assert not (record.smear_gate_enabled or record.sparse_attn_gate_enabled or record.lqer_enabled)
    assert record.mlp_clip_sigmas is record.attn_clip_sigmas is None


def test_frontier_techniques_switch_one_at_a_time():
    cfg = load_config({"PRESET": "frontier", "LQER_ENABLED": "0", "MLP_CLIP_SIGMAS": "auto"})
    assert cfg.smear_gate_enabled and not cfg.lqer_enabled and cfg.mlp_clip_sigmas is None
    with pytest.raises(TrainerError, match="GATE_WINDOW=0"):
        load_config({"GATE_WINDOW": "0"})
