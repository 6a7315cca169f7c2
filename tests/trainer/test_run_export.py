"""The export as the run loop calls it: a tiny CPU run of the trainer's entry point, end to end."""

import re

import pytest
import torch

import trainer.artifact
from audits.submission.logparse import parse_log
from trainer import main as entry
from trainer.compress import read_artifact

# The tiny preset, widened so the MLP matrices and the embedding are quantized (over 65,536
# weights each) and GPTQ runs on Hessians from the run's training batches (half the preset's
# batch: the same calibration, on fewer tokens).
SETTINGS = {"PRESET": "tiny", "MODEL_DIM": "136", "ITERATIONS": "6", "WARMUP_STEPS": "1",
            "TRAIN_BATCH_TOKENS": "2048"}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The tiny run is fastest on one thread (and avoids stalls on small shared machines)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _run(monkeypatch, small_data_dir, out):
    for name, value in {**SETTINGS, "DATA_DIR": str(small_data_dir), "OUT_DIR": str(out)}.items():
        monkeypatch.setenv(name, value)
    entry.main()
    return (out / "train.log").read_text()


@pytest.mark.slow
def test_a_run_ends_with_the_artifact_and_its_scores(monkeypatch, small_data_dir, tmp_path):
    text = _run(monkeypatch, small_data_dir, tmp_path)
    log = parse_log(text)
    assert re.search(r"^GPTQ:collected 13 Hessians in [\d.]+s \(4 batches; no wallclock budget\)$",
                     text, re.M)
    assert re.search(r"^  gptq int6: blocks\.N\.mlp\.fc\.weight, blocks\.N\.mlp\.proj\.weight$",
                     text, re.M)
    assert re.search(r"^  gptq int8: tok_emb\.weight$", text, re.M)
    assert re.search(r"^code: counted from the \d+ trainer modules loaded", text, re.M)
    assert text.index("export:floor ") < text.index("step:1/")  # checked before training
    assert (tmp_path / "final_model.pga").stat().st_size == log.model_bytes.value
    stored = read_artifact(tmp_path / "final_model.pga")
    assert {"tok_emb.weight", "blocks.0.mlp.fc.weight"} <= set(stored)
    assert [m.name for m in log.metrics if m.kind == "scored"] == [
        "quantized", "quantized_exact", "quantized_sliding_window", "quantized_sliding_window_exact",
        "quantized_ttt", "quantized_ttt_exact"]
    bpb = {m.name: m.val_bpb for m in log.metrics}
    assert abs(bpb["quantized_exact"] - bpb["pre-quantization"]) < 0.02  # int6 GPTQ: a small gap
    assert bpb["quantized_ttt_exact"] < bpb["quantized_sliding_window_exact"]  # a barely trained
    # model learns from the chunks it has scored
    assert log.total_eval_time_ms is not None


def test_a_model_no_pruning_can_fit_stops_before_training(monkeypatch, small_data_dir, tmp_path, capsys):
    monkeypatch.setattr(trainer.artifact, "CAP_BYTES", 3_000)
    with pytest.raises(SystemExit) as info:
        _run(monkeypatch, small_data_dir, tmp_path)
    assert info.value.code == 2  # bad input: one line, as every TrainerError
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.match(r"train_gpt: even with every quantized weight at zero the "
                                      r"artifact would be [\d,]+ bytes .* over the 3,000-byte cap; "
                                      r"make the model smaller$", err[0])
    assert not (tmp_path / "final_model.pga").exists()
    assert not (tmp_path / "final_model.pt").exists()  # no step was trained


@pytest.mark.slow
def test_a_run_with_the_frontier_techniques_ends_with_a_corrected_artifact(monkeypatch, small_data_dir,
                                                                          tmp_path):
    """The frontier preset's techniques on the tiny model: the gates train, LQER's factors are
    in the artifact and folded back when it is scored, the embedding is int7."""
    from trainer.config import PRESETS
    techniques = {"SMEAR_GATE_ENABLED", "SPARSE_ATTN_GATE_ENABLED", "LQER_ENABLED", "EMBED_BITS",
                  "EMBED_CLIP_SIGMAS", "MLP_CLIP_SIGMAS", "ATTN_CLIP_SIGMAS"}
    for name, value in PRESETS["frontier"].items():
        if name.upper() in techniques:
            monkeypatch.setenv(name.upper(), str(value))
    text = _run(monkeypatch, small_data_dir, tmp_path)
    log = parse_log(text)
    assert re.search(r"^  gptq int7: tok_emb\.weight$", text, re.M)
    assert re.search(r"^lqer:rank 4 corrections of \S+, \S+, \S+ \(\d[\d,]* values\)", text, re.M)
    stored = read_artifact(tmp_path / "final_model.pga")
    assert sum(name.endswith(".lqer_a") for name in stored) == 3
    assert "smear_gate.lam" in stored and "blocks.0.attn.head_gate.weight" in stored
    bpb = {m.name: m.val_bpb for m in log.metrics}
    assert abs(bpb["quantized_exact"] - bpb["pre-quantization"]) < 0.05
    assert bpb["quantized_ttt_exact"] < bpb["quantized_sliding_window_exact"]


@pytest.mark.slow
def test_a_run_with_lora_ttt_adapts_to_the_documents_it_scores(monkeypatch, small_data_dir, tmp_path):
    """TTT_MODE=lora in the run loop: the validation documents adapted in two groups with an
    SGD phase between them; a barely trained model learns a lot from the chunks it scored."""
    for name, value in {"TTT_MODE": "lora", "TTT_LORA_CHUNK_TOKENS": "32", "TTT_LORA_RANK": "4",
                        "TTT_LORA_LR": "0.003", "TTT_LORA_BATCH_DOCS": "4", "TTT_PHASES": "1",
                        "TTT_PHASE_DOCS": "2", "TTT_LR": "0.001", "TTT_EPOCHS": "1"}.items():
        monkeypatch.setenv(name, value)
    text = _run(monkeypatch, small_data_dir, tmp_path)
    log = parse_log(text)
    assert re.search(r"^ttt_lora:start docs=\d+ groups=2 rank=4 ", text, re.M)
    assert re.search(r"^ttt_lora:sgd 1/1 positions=0\.\.\d+ ", text, re.M)
    bpb = {m.name: m.val_bpb for m in log.metrics}
    assert {"quantized_exact", "quantized_ttt_exact"} <= set(bpb)
    assert bpb["quantized_ttt_exact"] < bpb["quantized_sliding_window_exact"] - 0.1
