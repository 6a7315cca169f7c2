import re
from pathlib import Path

import pytest
import torch

from audits.submission.logparse import parse_log
from trainer import artifact, compress, lqer, quant, scoring, sliding
from trainer.codesize import shipped_form
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
    unpruned = artifact.unpruned_path(path)
    if unpruned.exists():
        figures["pruning_cost_bpb"] = scoring.pruning_cost(cfg, model, unpruned, val, byte_table(),
                                                           figures["quantized"]["val_bpb"],
                                                           log=lines.append)
    return figures, lines


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return _export(tmp_path_factory.mktemp("export"))


def test_export_logs_every_line_the_audit_reads(exported):
    figures, lines = exported
    log = parse_log("\n".join(lines))
    assert log.hessians is not None and log.calibration == "train"
    assert log.model_bytes.value == figures["model_bytes"]
    assert log.code_bytes_compressed.value == len(shipped_form(CODE))
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
    # COMPRESSOR=best: both methods on a sample (here the whole small container), one in full.
    sample = next(line for line in lines if line.startswith("compression:sample "))
    sizes = dict(re.findall(r"(brotli|lzma) ([\d,]+) bytes", sample))
    assert sample.endswith(f"-> {figures['method']}")
    assert figures["method"] == min(sizes, key=lambda m: int(sizes[m].replace(",", "")))
    assert f"compression: {figures['method']} {figures['model_bytes']:,} bytes in " in "\n".join(lines)
    assert figures["pruned_levels"] == 0 and not any(line.startswith("export:fit") for line in lines)


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


@pytest.mark.slow
def test_over_the_cap_the_export_prunes_to_fit_and_says_what_it_did(exported, tmp_path, monkeypatch):
    """A model made to land 3% over the cap comes out under it, with the pruning logged, and the
    artifact on disk is the pruned one that evaluation reads."""
    unfitted = exported[0]
    before = compress.read_artifact(_unfitted_artifact(tmp_path / "unfitted"))
    cap = int(unfitted["total_bytes"] * 0.97)
    monkeypatch.setattr(artifact, "CAP_BYTES", cap)
    figures, lines = _export(tmp_path, cfg=config(ttt_enabled=False))
    assert unfitted["total_bytes"] > cap >= figures["total_bytes"]
    pruned = figures["pruned_levels"]
    assert pruned > 0
    assert (tmp_path / "model.pga").stat().st_size == figures["model_bytes"]
    assert not artifact.unpruned_path(tmp_path / "model.pga").exists()  # removed once measured
    [fit] = [line for line in lines if line.startswith("export:fit pruned ")]
    assert fit.startswith(f"export:fit pruned {pruned:,} of ")
    assert f"-> {figures['model_bytes']:,} bytes in " in fit
    assert any(line.startswith("export:prune round 1: ") for line in lines)
    after = compress.read_artifact(tmp_path / "model.pga")
    # Exactly the pruned levels became zero; nothing else changed.
    changed = sum(int((after[n].q != before[n].q).sum()) for n, v in before.items()
                  if isinstance(v, quant.QTensor))
    newly_zero = sum(int(((after[n].q == 0) & (before[n].q != 0)).sum()) for n, v in before.items()
                     if isinstance(v, quant.QTensor))
    assert changed == newly_zero == pruned
    log = parse_log("\n".join(lines))
    assert log.artifact_bytes.value == figures["total_bytes"] <= cap
    # What pruning cost is measured against the unpruned artifact's score, and logged.
    cost = figures["quantized"]["val_bpb"] - unfitted["quantized"]["val_bpb"]
    assert figures["pruning_cost_bpb"] == pytest.approx(cost, abs=1e-9)
    [line] = [line for line in lines if line.startswith("export:fit cost ")]
    assert f"before pruning, {figures['quantized']['val_bpb']:.5f} after ({cost:+.5f};" in line
    assert figures["quantized"]["val_bpb"] < 1.05 * unfitted["quantized"]["val_bpb"]


def _unfitted_artifact(folder):
    folder.mkdir()
    _export(folder, cfg=config(ttt_enabled=False, sliding_window_enabled=False))
    return folder / "model.pga"


def test_a_model_that_cannot_fit_at_all_is_refused_with_nothing_written(tmp_path, monkeypatch):
    monkeypatch.setattr(artifact, "CAP_BYTES", 3_000)
    with pytest.raises(artifact.ArtifactTooLarge) as info:
        _export(tmp_path)
    message = str(info.value)
    assert "\n" not in message and "no pruning fits it (even with every quantized level at zero it is" in message
    assert message.endswith("nothing was written; make the model smaller")
    assert list(tmp_path.iterdir()) == []


def test_a_model_that_cannot_fit_is_refused_before_training(monkeypatch):
    lines = []
    artifact.check_floor(config(), tiny_model(), CODE, lines.append)
    floor = int(re.fullmatch(r"export:floor ([\d,]+) bytes with every quantized weight at zero: "
                             r"the cap can be met", lines[0]).group(1).replace(",", ""))
    monkeypatch.setattr(artifact, "CAP_BYTES", floor - 1)
    with pytest.raises(artifact.ArtifactTooLarge,
                       match=rf"^even with every quantized weight at zero the artifact would be "
                             rf"{floor:,} bytes .*; make the model smaller$"):
        artifact.check_floor(config(), tiny_model(), CODE, lines.append)


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


@pytest.mark.slow
def test_lqer_factors_are_written_counted_and_kept_when_the_cap_is_fitted(tmp_path, monkeypatch):
    """LQER on: the factors of the worst matrices are in the artifact; a cap the factors push the
    model over is met by pruning levels (trainer/fitcap.py), never by dropping the factors."""
    cfg = config(lqer_enabled=True, lqer_top_k=2, lqer_rank=2, lqer_group=16, ttt_enabled=False,
                 sliding_window_enabled=False)
    (tmp_path / "plain").mkdir()
    (tmp_path / "lqer").mkdir()
    plain, _ = _export(tmp_path / "plain", cfg=config(ttt_enabled=False, sliding_window_enabled=False))
    corrected, lines = _export(tmp_path / "lqer", cfg=cfg)
    assert corrected["model_bytes"] > plain["model_bytes"]  # the factors cost bytes
    assert any(line.startswith("lqer:rank 2 corrections of ") for line in lines)
    stored = compress.read_artifact(tmp_path / "lqer" / "model.pga")
    factors = {n: t for n, t in stored.items() if ".lqer_" in n}
    assert len(factors) == 2 * len(lqer.SUFFIXES)
    cap = plain["total_bytes"]  # the unfitted model with factors is over it
    monkeypatch.setattr(artifact, "CAP_BYTES", cap)
    fitted, lines = _export(tmp_path, cfg=cfg)
    assert fitted["pruned_levels"] > 0 and fitted["total_bytes"] <= cap
    after = compress.read_artifact(tmp_path / "model.pga")
    assert all(torch.equal(after[n], t) for n, t in factors.items())


@pytest.mark.slow
def test_awq_groups_are_written_read_back_and_kept_when_the_cap_is_fitted(tmp_path, monkeypatch):
    """AWQ_GROUPS on: the chosen groups' finer levels and scales are in the artifact, evaluation
    reads them, and pruning to a cap keeps them."""
    cfg = config(awq_groups=2, awq_group_size=16, ttt_enabled=False, sliding_window_enabled=False)
    figures, lines = _export(tmp_path, cfg=cfg)
    assert any(line.startswith("awq:int8 columns ") for line in lines)
    stored = compress.read_artifact(tmp_path / "model.pga")
    fine = {n: v.fine for n, v in stored.items() if isinstance(v, quant.QTensor) and v.fine}
    assert sum(len(groups) for groups in fine.values()) == 2
    monkeypatch.setattr(artifact, "CAP_BYTES", figures["total_bytes"] - 2_000)
    fitted, _ = _export(tmp_path, cfg=cfg)
    assert fitted["pruned_levels"] > 0
    after = compress.read_artifact(tmp_path / "model.pga")
    assert {n: v.fine for n, v in after.items() if isinstance(v, quant.QTensor) and v.fine} == fine


@pytest.mark.parametrize("embed_bits, chosen", [(8, "blocks.0.fc.weight"), (7, "tok_emb.weight")])
def test_awq_groups_go_only_to_matrices_below_their_bits(embed_bits, chosen):
    model, lines = tiny_model(), []
    state = model.state_dict()
    hessians = {n: torch.eye(state[n].shape[1]) for n in ("tok_emb.weight", "blocks.0.fc.weight")}
    hessians["tok_emb.weight"] *= 100  # the loudest inputs: chosen unless at 8 bits already
    cfg = config(awq_groups=1, awq_group_size=16, embed_bits=embed_bits)
    fine = artifact._salient(cfg, {"tok_emb.weight"}, state, hessians, lines.append)
    assert list(fine) == [chosen] and lines[0].startswith(f"awq:int8 columns {chosen} ")


@pytest.mark.slow
def test_a_rans_artifact_scores_as_the_lzma_one(tmp_path):
    """COMPRESSOR=rans changes the bytes, not the model: the same levels come back."""
    scores = {}
    for method in ("lzma", "rans"):
        (tmp_path / method).mkdir()
        cfg = config(compressor=method, ttt_enabled=False, sliding_window_enabled=False)
        figures, lines = _export(tmp_path / method, cfg=cfg)
        assert any(line.startswith(f"compression: {method} ") for line in lines)
        scores[method] = figures["quantized"]["val_bpb"]
    assert (tmp_path / "rans" / "model.pga").read_bytes()[4] == compress.METHODS["rans"]
    assert scores["rans"] == scores["lzma"]


@pytest.mark.slow
def test_a_rans_export_over_the_cap_is_fitted_with_rans(tmp_path, monkeypatch):
    """The frontier preset's compressor through the cap fitting: pruned until the rans artifact
    fits, and written as rans."""
    cfg = config(compressor="rans", ttt_enabled=False, sliding_window_enabled=False)
    (tmp_path / "unfitted").mkdir()
    unfitted, _ = _export(tmp_path / "unfitted", cfg=cfg)
    cap = int(unfitted["total_bytes"] * 0.97)
    monkeypatch.setattr(artifact, "CAP_BYTES", cap)
    figures, lines = _export(tmp_path, cfg=cfg)
    assert unfitted["total_bytes"] > cap >= figures["total_bytes"] and figures["pruned_levels"] > 0
    assert any(line.startswith("export:fit pruned ") for line in lines)
    assert (tmp_path / "model.pga").read_bytes()[4] == compress.METHODS["rans"]
