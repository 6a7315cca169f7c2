"""Whole runs on CPU with the tiny preset: pgolf train end to end, bundle vs package, two gloo
processes vs one, and bad input stopping in one line."""

import hashlib
import math
import os
import re

import numpy as np
import pytest
import torch

from audits.submission.logparse import parse_log
from trainer.bundle import write_bundle
from trainer.config import load_config, record_settings
from trainer.data import load_validation_bytes, load_validation_tokens
from trainer.model import GPT
from trainer.shards import shard_paths, write_shard
from trainer_support import clean_env, run_trainer

STEPS = 20
# The runs compared step for step need only a few steps to tell two programs apart (each of steps
# 1 to 5 is logged, then the last, and every evaluation after it); the loss falling needs more.
SAME_STEPS = 6
# Every run here at a fraction of the tiny preset's cost, with the same code running: half its
# batch (each of the 8 micro-batches still 2 sequences) and one warmup step per graph instead of
# two (the warmup still runs, then the start is restored).
CHEAP = {"TRAIN_BATCH_TOKENS": "2048", "WARMUP_STEPS": "1"}


def _losses(log_text):
    return re.findall(r"(?:train_loss|val_loss):(\S+)", log_text)


def _sets(**settings) -> list[str]:
    """`pgolf train`'s --set arguments for `settings`."""
    return [arg for name, value in settings.items() for arg in ("--set", f"{name}={value}")]


@pytest.fixture(scope="module")
def bundled_run(small_data_dir, tmp_path_factory):
    """`pgolf train` with the tiny preset: bundle into the run folder, run that file."""
    cwd = tmp_path_factory.mktemp("cwd")
    result = run_trainer(["-m", "pgolf_cli", "train", "--preset", "tiny", "--data-dir", str(small_data_dir),
                          *_sets(ITERATIONS=STEPS, **CHEAP), "--out", "run"], clean_env(), cwd=cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    return cwd


@pytest.mark.slow
def test_run_folder_holds_what_ran(bundled_run):
    run = bundled_run / "run"
    assert sorted(p.name for p in bundled_run.iterdir()) == ["run"]  # nothing outside the run folder
    assert {"train_gpt.py", "train.log", "final_model.pt"} <= {p.name for p in run.iterdir()}
    log = parse_log((run / "train.log").read_text())
    assert log.code_sha256.value == hashlib.sha256((run / "train_gpt.py").read_bytes()).hexdigest()
    assert (log.seed.value, log.world_size.value, log.train_shards.value) == (1337, 1, 1)
    assert log.python_version is not None and log.torch_version is not None
    assert [s.step for s in log.steps][:5] == [1, 2, 3, 4, 5] and log.step_count == STEPS
    assert [m.kind for m in log.metrics][:2] == ["step_val", "diagnostic"]  # then the export's
    state = torch.load(run / "final_model.pt")
    GPT(load_config({"PRESET": "tiny"})).load_state_dict(state)


@pytest.mark.slow
def test_loss_falls(bundled_run):
    log = parse_log((bundled_run / "run" / "train.log").read_text())
    first, last = log.steps[0].train_loss, log.steps[-1].train_loss
    assert first == pytest.approx(6.93, abs=0.01)  # ln(1024): uniform at the start
    assert last < first - 1.5
    final = next(m for m in log.metrics if m.kind == "diagnostic")
    assert final.name == "pre-quantization" and final.val_loss < 5.4 and final.val_bpb < 2.6


@pytest.mark.slow
def test_the_ngram_tilt_changes_the_scores_and_nothing_before_them(bundled_run, small_data_dir, tmp_path):
    """The same run with the n-gram tilt on (order 4: the sample's verses repeat short phrases):
    training and its pre-quantization score are the same, every scored phase differs."""
    result = run_trainer(["-m", "pgolf_cli", "train", "--preset", "tiny", "--data-dir", str(small_data_dir),
                          *_sets(ITERATIONS=STEPS, **CHEAP, NGRAM_TILT_ENABLED=1, NGRAM_TILT_ORDER=4),
                          "--out", "run"], clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    plain, tilted = ({m.name: m.val_bpb for m in parse_log((folder / "run" / "train.log").read_text()).metrics
                      if m.kind in ("diagnostic", "scored")} for folder in (bundled_run, tmp_path))
    phases = {"quantized_exact", "quantized_sliding_window_exact", "quantized_ttt_exact"}
    assert phases <= set(plain) and phases <= set(tilted)
    assert plain["pre-quantization"] == tilted["pre-quantization"]
    assert all(abs(plain[p] - tilted[p]) > 1e-4 for p in phases), (plain, tilted)


@pytest.mark.slow
def test_bundle_and_package_give_the_same_losses(bundled_run, small_data_dir, tmp_path):
    env = clean_env(PRESET="tiny", DATA_DIR=small_data_dir, ITERATIONS=STEPS, OUT_DIR=tmp_path, **CHEAP)
    result = run_trainer(["-m", "trainer"], env)
    assert result.returncode == 0, result.stderr[-3000:]
    package = _losses((tmp_path / "train.log").read_text())
    bundle = _losses((bundled_run / "run" / "train.log").read_text())
    assert len(package) == len(bundle) > STEPS // 10 and package == bundle


@pytest.mark.slow
def test_record_bundle_trains_like_the_full_one(bundled_run, small_data_dir, tmp_path):
    """The record bundle for the run's settings (what `pgolf train` writes on a GPU machine),
    with its folds, its extras left out and its settings pinned, gives the same losses in
    training and in every phase of the export's evaluation."""
    script = tmp_path / "train_gpt.py"
    text = write_bundle(script, settings=record_settings(load_config(
        {"PRESET": "tiny", "ITERATIONS": str(STEPS), **CHEAP})))
    assert len(text) < len((bundled_run / "run" / "train_gpt.py").read_text())
    env = clean_env(PRESET="tiny", DATA_DIR=small_data_dir, ITERATIONS=STEPS, OUT_DIR=tmp_path, **CHEAP)
    result = run_trainer([str(script)], env)
    assert result.returncode == 0, result.stderr[-3000:]
    record = (tmp_path / "train.log").read_text()
    full = (bundled_run / "run" / "train.log").read_text()
    assert len(_losses(record)) == len(_losses(full)) > STEPS // 10
    assert _losses(record) == _losses(full)
    assert re.findall(r"val_bpb:(\S+)", record) == re.findall(r"val_bpb:(\S+)", full)


# Every setting a record bundle folds, the other way from the tiny preset.
FEATURES_OFF = {"TTT_ENABLED": "0", "SLIDING_WINDOW_ENABLED": "0", "GPTQ_ENABLED": "0", "NUM_LOOPS": "0",
                "TIE_EMBEDDINGS": "0", "SKIP_GATES_ENABLED": "0", "LN_SCALE": "0", "GRAD_CLIP_NORM": "0",
                "EMA_DECAY": "0", "COMPRESSOR": "lzma", "WARMUP_STEPS": "0"}


# The frontier preset's own code (the gates, LQER, its Newton-Schulz coefficients, PR #1855's two
# lanes) at tiny sizes.
FRONTIER_ON = {"SMEAR_GATE_ENABLED": "1", "SPARSE_ATTN_GATE_ENABLED": "1", "LQER_ENABLED": "1",
               "MUON_NS_COEFFS": "polar_express", "PARALLEL_LANES": "1"}
# Progressive context (the frontier's, at the tiny preset's 128 tokens) and AWQ-lite (off in every
# preset).
LATER_ON = {"TRAIN_SEQ_SCHEDULE": "64@0.5", "AWQ_GROUPS": "1", "AWQ_GROUP_SIZE": "16"}


@pytest.mark.slow
@pytest.mark.parametrize("features, shipped, left_out", [
    (FEATURES_OFF, (), ("def eval_ttt", "def collect_hessians", "def seq_stages(", "def salient_groups(")),
    (FRONTIER_ON, ("class SmearGate(", "def lqer_corrections("), ()),
    (LATER_ON, ("def seq_stages(", "def salient_groups("), ()),
], ids=["features_off", "frontier_on", "later_on"])
def test_record_bundle_trains_like_the_package(small_data_dir, tmp_path, features, shipped, left_out):
    """Every fold either way, and the minified file with its shortened names, run the package's
    code: the same losses and val_bpb."""
    settings = {"PRESET": "tiny", "ITERATIONS": str(SAME_STEPS), **CHEAP, **features}
    script = tmp_path / "record" / "train_gpt.py"
    script.parent.mkdir()
    text = write_bundle(script, settings=record_settings(load_config(settings)))
    assert all(d in text for d in shipped) and not any(d in text for d in left_out)
    logs = []
    for out, args in ((tmp_path / "record", [str(script)]), (tmp_path / "package", ["-m", "trainer"])):
        result = run_trainer(args, clean_env(DATA_DIR=small_data_dir, OUT_DIR=out, **settings))
        assert result.returncode == 0, result.stderr[-3000:]
        logs.append((out / "train.log").read_text())
    record, package = (_losses(log) for log in logs)
    assert len(record) > SAME_STEPS // 2 and record == package
    assert re.findall(r"val_bpb:(\S+)", logs[0]) == re.findall(r"val_bpb:(\S+)", logs[1])
    if features is LATER_ON:  # the context grew half way; AWQ-lite looked for groups (the tiny
        # model's matrices are all fp16, so it finds none: tests/trainer/test_export.py has some)
        assert re.findall(r"^train_seq_len:(\d+) step:(\d+)", logs[0], re.M) == [("64", "0"),
                                                                                  ("128", str(SAME_STEPS // 2))]
        assert re.search(r"^awq:int8 columns none ", logs[0], re.M)


@pytest.mark.slow
def test_two_gloo_processes_train_like_one(small_data_dir, tmp_path):
    """World 2 with 4 accumulation steps reaches the same weights as world 1 with 8: DDP
    averaging, the Muon split and the loader's rank slices agree."""
    finals = []
    for launcher in (["-m", "trainer"],
                     ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "trainer"]):
        out = tmp_path / str(len(finals))
        # The tiny preset's batch: at half of it, 6 steps do not bring the loss under 6.5.
        env = clean_env(PRESET="tiny", DATA_DIR=small_data_dir, ITERATIONS=6, OUT_DIR=out, PREQUANT_ONLY=1,
                        WARMUP_STEPS=CHEAP["WARMUP_STEPS"])
        result = run_trainer(launcher, env)
        assert result.returncode == 0, result.stderr[-3000:]
        log = parse_log((out / "train.log").read_text())
        final = next(m for m in log.metrics if m.kind == "diagnostic")  # the trained weights' score
        finals.append(final.val_loss)
    assert finals[0] < 6.5  # it trained
    assert finals[1] == pytest.approx(finals[0], rel=1e-4)


def run_main_in_process(env: dict[str, str], monkeypatch, capsys) -> tuple[int, str]:
    """`python -m trainer` with `env`, run in this process: for input the trainer refuses before
    it starts anything, the exit status and stderr are those of a subprocess, without the seconds
    a new process spends importing torch."""
    from trainer import main

    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main.main()
    return stop.value.code, capsys.readouterr().err


@pytest.mark.parametrize("settings, message", [
    ({"WORLD_SIZE": "3"}, "WORLD_SIZE=3 must divide 8"),
    ({"NUM_LAYERS": "x"}, "NUM_LAYERS='x': expected an integer"),
    ({"TRAIN_BATCH_TOKENS": "1000"}, "TRAIN_BATCH_TOKENS=1000 must be a multiple of 8"),
    ({"VOCAB_SIZE": "2048", "TOKENIZER_PATH": "TOKENIZER"}, "has 1024 pieces but VOCAB_SIZE=2048"),
])
def test_bad_input_stops_in_one_line(small_data_dir, tmp_path, settings, message, monkeypatch, capsys):
    settings = {k: v.replace("TOKENIZER", str(small_data_dir / "tokenizers" / "fineweb_1024_bpe.model"))
                for k, v in settings.items()}
    env = clean_env(PRESET="tiny", DATA_PATH=small_data_dir / "datasets" / "fineweb10B_sp1024",
                    OUT_DIR=tmp_path / "out", **settings)
    status, stderr = run_main_in_process(env, monkeypatch, capsys)
    assert status == 2
    assert stderr.count("\n") == 1 and message in stderr
    assert not (tmp_path / "out").exists()


def test_malformed_shard_stops_in_one_line(small_data_dir, tmp_path, monkeypatch, capsys):
    dataset = tmp_path / "datasets" / "fineweb10B_sp1024"
    dataset.mkdir(parents=True)
    for shard in (small_data_dir / "datasets" / "fineweb10B_sp1024").iterdir():
        (dataset / shard.name).write_bytes(shard.read_bytes())
    broken = dataset / "fineweb_train_000000.bin"
    broken.write_bytes(broken.read_bytes()[:-1])
    env = clean_env(PRESET="tiny", DATA_PATH=dataset, TOKENIZER_PATH=small_data_dir / "tokenizers" /
                    "fineweb_1024_bpe.model", OUT_DIR=tmp_path / "out")
    status, stderr = run_main_in_process(env, monkeypatch, capsys)
    assert status == 2 and stderr.count("\n") == 1
    assert "fineweb_train_000000.bin: the header says" in stderr


@pytest.mark.slow
def test_divergence_stops_the_run(small_data_dir, tmp_path):
    env = clean_env(PRESET="tiny", DATA_DIR=small_data_dir, ITERATIONS=20, MATRIX_LR="1e30",
                    OUT_DIR=tmp_path)
    result = run_trainer(["-m", "trainer"], env)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "training diverged at step 2: the loss is not finite (nan on rank 0)" in result.stderr


def test_missing_shards_stop_in_one_line(tmp_path):
    (tmp_path / "datasets" / "fineweb10B_sp1024").mkdir(parents=True)
    write_shard(tmp_path / "datasets" / "fineweb10B_sp1024" / "fineweb_val_000000.bin", np.arange(300))
    result = run_trainer(["-m", "trainer"], clean_env(PRESET="tiny", DATA_DIR=tmp_path))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "no fineweb_train_*.bin shards in" in result.stderr


@pytest.mark.slow
def test_caseops_data_scores_every_phase_on_the_original_bytes(caseops_data_dir, tmp_path):
    """On CaseOps data every phase divides its bits by the sidecar's bytes: each scores every
    validation target once, so bpb * ln 2 / loss is targets / original bytes in all of them."""
    # The accounting does not depend on the training: two steps do.
    result = run_trainer(["-m", "pgolf_cli", "train", "--preset", "tiny", "--data-dir",
                          str(caseops_data_dir), *_sets(ITERATIONS=2, **CHEAP), "--out", "run"],
                         clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    files = shard_paths(caseops_data_dir / "datasets" / "fineweb10B_sp1024", "val")
    tokens = load_validation_tokens(files, load_config({"PRESET": "tiny"}).eval_seq_len)
    original = load_validation_bytes(files, tokens.numel())[1:].sum().item()
    lines = re.findall(r"(\S+_exact|post-ema) val_loss:(\S+) val_bpb:(\S+)",
                       (tmp_path / "run" / "train.log").read_text())
    assert [name for name, *_ in lines] == ["post-ema", "quantized_exact",
                                            "quantized_sliding_window_exact", "quantized_ttt_exact"]
    for name, loss, bpb in lines:
        assert float(bpb) * math.log(2) / float(loss) == pytest.approx((tokens.numel() - 1) / original,
                                                                      rel=1e-6), name
