import re
from pathlib import Path

import pytest
import torch

from audits.submission.logparse import parse_log
from trainer import artifact, compress, quant, scoring, sliding
from trainer.codesize import compact_form
from tinylm import byte_table, config, markov_tokens, tiny_model

CODE = Path(artifact.__file__).read_text()


class Loader:
    """Training batches from a stream that is not the validation stream."""

    def __init__(self, seed=1, rows=8, seq=32):
        self.tokens, self.rows, self.seq, self.i = markov_tokens(4096, seed=seed), rows, seq, 0

    def next_batch(self):
        n = self.rows * self.seq
        start = (self.i * n) % (self.tokens.numel() - n - 1)
        self.i += 1
        chunk = self.tokens[start:start + n + 1]
        return chunk[:-1].view(self.rows, self.seq), chunk[1:].view(self.rows, self.seq)


class NoData:
    def next_batch(self):
        raise AssertionError("calibration must not start")


def _export(tmp_path, cfg=None, val=None, loader=None, seconds=10.0):
    """What the run loop's export does: check the stream, write the artifact, evaluate it."""
    lines, cfg, model = [], cfg or config(), tiny_model()
    val = markov_tokens(321) if val is None else val
    sliding.check_length(val.numel(), cfg.eval_seq_len)
    path = tmp_path / "model.pga"
    figures = artifact.write_artifact(cfg, model, loader or Loader(), code=CODE,
                                      artifact_path=path, calibration_seconds=seconds, log=lines.append)
    figures.update(scoring.evaluate_artifact(cfg, model, path, val, byte_table(), log=lines.append))
    return figures, lines


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return _export(tmp_path_factory.mktemp("export"))


def test_export_logs_every_line_the_audit_reads(exported):
    figures, lines = exported
    log = parse_log("\n".join(lines))
    assert log.hessians is not None and log.calibration == "train"
    assert log.model_bytes.value == figures["model_bytes"]
    assert log.code_bytes_compressed.value == len(compact_form(CODE).encode())
    assert log.code_bytes_uncompressed.value == len(CODE.encode())
    assert log.artifact_bytes.value == figures["model_bytes"] + figures["code_bytes_compressed"]
    names = [m.name for m in log.metrics]
    assert names == ["quantized", "quantized_exact", "quantized_sliding_window",
                     "quantized_sliding_window_exact", "quantized_ttt", "quantized_ttt_exact"]
    assert all(m.kind == "scored" for m in log.metrics)
    assert log.score.name == "quantized_ttt_exact" and log.score.decimals == 8
    assert log.score.val_bpb == pytest.approx(figures["quantized_ttt"]["val_bpb"], abs=1e-8)
    assert log.eval_time_ms.value == pytest.approx(figures["total_eval_seconds"] * 1000, abs=50)
    assert [m.base for m in log.eval_phases] == ["quantized", "quantized_sliding_window",
                                                 "quantized_ttt"]
    assert any(re.fullmatch(r"compression: brotli [\d,]+ bytes in [\d.]+s, lzma [\d,]+ bytes in "
                            r"[\d.]+s \(container [\d,]+\)",
                            line) for line in lines)
    assert figures["model_bytes"] == min(figures["brotli_bytes"], figures["lzma_bytes"])


def test_quantized_model_scores_close_to_the_original(exported, tmp_path):
    figures, _ = exported
    pre_loss, pre_bpb = sliding.eval_stream(tiny_model(), markov_tokens(321), byte_table(),
                                            seq_len=32, stride=32, batch_windows=8)
    assert abs(figures["quantized"]["val_bpb"] - pre_bpb) < 0.01 * pre_bpb


def test_the_artifact_on_disk_is_what_evaluation_reads(exported, tmp_path):
    _, lines = _export(tmp_path, cfg=config(ttt_enabled=False, compressor="lzma"))
    artifact = tmp_path / "model.pga"
    size = int(re.search(r"quantized\+lzma: (\d+) bytes", "\n".join(lines)).group(1))
    assert artifact.stat().st_size == size
    stored = quant.dequantize_state_dict(compress.read_artifact(artifact))
    model = tiny_model(seed=5)  # other weights than the exported model's
    assert not torch.allclose(model.tok_emb.weight, stored["tok_emb.weight"], atol=1e-3)
    scoring.evaluate_artifact(config(ttt_enabled=False), model, artifact, markov_tokens(321),
                             byte_table(), log=lambda s: None)
    for name, value in model.state_dict().items():
        assert torch.equal(value, stored[name].to(value.dtype)), name


def test_over_the_cap_nothing_is_written_and_the_knob_is_named(exported, tmp_path, monkeypatch):
    cap = int(exported[0]["total_bytes"] * 0.95)
    monkeypatch.setattr(artifact, "CAP_BYTES", cap)
    with pytest.raises(artifact.ArtifactTooLarge) as info:
        _export(tmp_path)
    message = str(info.value)
    assert "\n" not in message and f"over the {cap:,}-byte cap; nothing was written" in message
    assert list(tmp_path.iterdir()) == []
    sigmas = float(re.search(r"MATRIX_CLIP_SIGMAS from 12.85 to about ([\d.]+)", message).group(1))
    # The advice works: with the suggested clip the same model fits.
    figures, _ = _export(tmp_path, cfg=config(matrix_clip_sigmas=sigmas, ttt_enabled=False))
    assert figures["total_bytes"] <= cap


def test_far_over_the_cap_clipping_is_not_offered(tmp_path, monkeypatch):
    monkeypatch.setattr(artifact, "CAP_BYTES", 200_000)
    with pytest.raises(artifact.ArtifactTooLarge, match="most weights round to zero; make the model"):
        _export(tmp_path)


def test_a_model_that_cannot_fit_at_any_clip_is_told_so(tmp_path, monkeypatch):
    monkeypatch.setattr(artifact, "CAP_BYTES", 3_000)
    with pytest.raises(artifact.ArtifactTooLarge,
                       match="nothing was written. No clip setting can fit.*make the model smaller"):
        _export(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_short_validation_is_refused_before_any_work(tmp_path):
    with pytest.raises(sliding.ValidationTooShort):
        _export(tmp_path, val=markov_tokens(20), loader=NoData())
    assert list(tmp_path.iterdir()) == []


def test_no_time_left_in_the_budget_means_round_to_nearest(tmp_path):
    figures, lines = _export(tmp_path, cfg=config(ttt_enabled=False, sliding_window_enabled=False),
                             loader=NoData(), seconds=0.0)
    assert "GPTQ:no calibration batch fits in the 0.0s left of the training budget: " \
        "round-to-nearest quantization" in lines
    assert any(line.startswith("  rtn int6: ") for line in lines)
    assert not any("gptq int" in line for line in lines)


def test_a_corrupted_artifact_stops_evaluation_with_one_line(exported, tmp_path):
    _export(tmp_path, cfg=config(ttt_enabled=False, sliding_window_enabled=False))
    artifact = tmp_path / "model.pga"
    data = bytearray(artifact.read_bytes())
    artifact.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(compress.ArtifactError) as info:
        scoring.evaluate_artifact(config(), tiny_model(), artifact, markov_tokens(321), byte_table(),
                                 log=lambda s: None)
    assert "\n" not in str(info.value)


def test_the_calibration_window_is_what_is_left_of_the_training_budget():
    cfg = config(max_wallclock_seconds=600.0, gptq_reserve_seconds=12.0)
    assert artifact.calibration_seconds(cfg, 588_900.0) == pytest.approx(11.1)
    assert artifact.calibration_seconds(cfg, 601_000.0) == 0.0
    assert artifact.calibration_seconds(config(max_wallclock_seconds=0.0), 5_000.0) == float("inf")
