"""The log parser on every real fixture log and on the line families the records use."""

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audits.submission.logparse import parse_log
from support import FIXTURES

ALL_LOGS = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".log", ".txt")
                  and p.name != "requirements.txt")


def parse(rel: str):
    return parse_log((FIXTURES / rel).read_text(), rel)


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: f"{p.parent.name[:24]}/{p.name}")
def test_every_fixture_log_has_a_score_and_times(path):
    log = parse_log(path.read_text(), path.name)
    assert log.completed
    assert log.score.kind == "scored"
    assert log.train_time_ms is not None and log.eval_time_ms is not None
    assert log.model_bytes is not None and log.artifact_bytes is not None


def test_baseline_figures_and_lines():
    log = parse("2026-03-17_NaiveBaseline/train.log")
    assert (log.score.name, log.score.val_bpb, log.score.val_loss, log.score.line) == (
        "final_int8_zlib_roundtrip_exact", 1.2243657, 2.07269931, 448)
    assert (log.stop.value, log.stop.line, log.stop_step) == (600038, 440, 13780)
    assert (log.model_bytes.value, log.model_bytes.line) == (15815847, 445)
    assert log.raw_model_bytes.value == 67224983  # the fp checkpoint, not the artifact
    assert (log.artifact_bytes.value, log.artifact_bytes.line) == (15863489, 446)
    assert log.code_bytes.value == 47642
    assert log.eval_time_ms.value == 1401  # the roundtrip eval, counted once with its _exact twin
    assert (log.seed.value, log.val_tokens.value, log.dataset.value) == (1337, 63779840, "fineweb10B_sp1024")
    assert log.steps[0].step == 1 and log.steps[0].train_time_ms == 24


def test_new_style_record_with_eval_phases_and_gptq_reserve():
    log = parse("2026-04-09_SP8192_3LayerRecur_ParResid_QK525_LegalTTT/train_seed42.log")
    assert (log.score.name, log.score.val_bpb, log.score.line) == ("quantized_ttt", 1.08079352, 150)
    assert [m.base for m in log.eval_phases] == ["quantized", "quantized_sliding_window", "quantized_ttt"]
    assert log.eval_time_ms.value == 25515 + 120961 + 366525
    assert log.gptq_reserve_ms.value == 12000
    assert (log.hessians.value, log.calibration) == (12.7, "train")
    assert log.stop.value == 588047 and log.step_count == 4550
    assert log.hparams["qk_gain_init"].value == "5.25"
    assert log.seed.value == 42 and log.seed.text == "seed: 42"
    # minutes-style step lines are read, marked approximate
    assert log.steps[-1].approx and log.steps[-1].train_time_ms == pytest.approx(9.7 * 60000)
    diag = [m for m in log.metrics if m.kind == "diagnostic"]
    assert diag[0].name == "pre-quantization"


def test_total_eval_time_wins_over_the_sum_and_reserve_uses_effective_window():
    log = parse("2026-04-29_SmearGateBOSFix_3Seed_1.06141/train_seed42_pr1851_original.log")
    assert log.total_eval_time_ms.value == pytest.approx(519500)
    assert log.eval_time_ms.value == pytest.approx(519500)
    # "gptq:reserving 0s, effective=599500ms": the printed 0s is rounded; the window says 0.5 s
    assert log.gptq_reserve_ms.value == 500


def test_self_generated_calibration_is_recognised():
    log = parse("2026-03-25_ValCalib_GPTQ_XSA_BigramHash3072/train_seed42.log")
    assert log.calibration == "self-generated"
    # the last line is an alias of the sliding score: still the last scored metric
    assert log.score.name == "final_int8_zlib_roundtrip_exact" and log.score.val_bpb == 1.11437394


def test_embedded_source_marker_is_read():
    log = parse("2026-04-10_VarLenAttn/logs/train2.txt")
    assert log.embedded_source.sha256 == "388f69e41684c93a" and log.embedded_source.lines > 2000


def test_baseline_style_embedded_source_is_hashed():
    code = 'import os\n\ndef main():\n    print("hi")\n\nif __name__ == "__main__":\n    main()\n'
    text = code + "\n" + "=" * 100 + "\nseed:7\nstep:1/10 train_loss:6.9 train_time:24ms step_avg:24.00ms\n"
    log = parse_log(text, "x.log")
    assert log.embedded_source.normalized_sha256 == hashlib.sha256(code.rstrip("\n").encode()).hexdigest()
    assert log.seed.value == 7 and log.steps[0].train_time_ms == 24  # lines after the source parsed


def test_timestamped_step_lines_and_equal_sign_metrics():
    text = ("1776142719.400 1/20000 train_loss: 9.0089 train_time: 0.0m tok/s: 16371725\n"
            "1776143349.278 stopping_early: wallclock_cap train_time: 587091ms step: 4832/20000\n"
            "ttt_sliding:done val_loss=1.889768 val_bpb=1.119230 elapsed=409.8s\n"
            "final_sliding val_loss:2.9877 val_bpb:1.1568 (stride=16, T=0.90) eval_time:428712ms\n")
    log = parse_log(text, "t.log")
    assert log.steps[0].step == 1 and log.stop.value == 587091
    assert [m.kind for m in log.metrics] == ["progress", "scored"]
    assert log.score.val_bpb == 1.1568 and log.score.decimals == 4
    assert log.eval_time_ms.value == 428712


def test_truncated_log_has_no_score():
    text = (FIXTURES / "2026-03-17_NaiveBaseline/train.log").read_text().splitlines()[:300]
    log = parse_log("\n".join(text), "cut.log")
    assert not log.completed and log.score is None and log.stop is None
    assert log.steps and log.train_time_ms.value == log.steps[-1].train_time_ms


def test_the_artifact_is_the_last_total_that_names_a_method_before_or_after_the_word():
    """A log that first totals a trial export and then the one it ships (`Total mixed
    submission`, the method named before the word) reports the shipped one."""
    log = parse_log("Total submission size: 135497444 bytes\n"
                    "Total submission size int8+zlib: 24859602 bytes\n"
                    "Total mixed submission: 15858571 bytes (FITS 16MB)\n", "two.log")
    assert (log.artifact_bytes.value, log.artifact_bytes.line) == (15858571, 3)


def test_size_lines_of_other_shapes():
    for line, model in {"quant:int5 artifact size: 16265723 bytes (15.51 MB)": 16265723,
                        "Artifact size:      15,762,406 bytes": 15762406}.items():
        log = parse_log(line + "\n", "s.log")
        assert (log.model_bytes.value, log.artifact_bytes) == (model, None), line
    cases = {"Artifact: 15103390 bytes, code: 61581 bytes, total: 15164971 bytes": 15164971,
             "model_int8_zlib:14410153 bytes  code:47144 bytes  total:14457297 bytes  limit:16000000": 14457297,
             "Serialized zstd-22: 15915703 bytes  Total: 15965664 bytes": 15965664,
             "mixed_int6_int8+lzma-6: 15887168 bytes, total: 15962515 bytes": 15962515}
    for line, total in cases.items():
        assert parse_log(line + "\n", "s.log").artifact_bytes.value == total, line
    # a raw size or a proxy is no total
    for line in ("[train] Raw submission size proxy: 98625029 bytes", "Serialized model: 135431033 bytes",
                 "artifact: 16324677 bytes (model:16279396 code:45281)"):
        assert parse_log(line + "\n", "s.log").artifact_bytes is None, line

def test_a_log_of_validation_steps_alone_times_its_training_there():
    """No training step line, only `step:N/M val_loss:... train_time:...` every 1,000 steps: the
    training time is the last of those; a training step line, where there is one, still decides."""
    lines = ["step:1000/2000 val_loss:2.2501 val_bpb:1.3326 train_time:69675ms step_avg:69.68ms",
             "step:2000/2000 val_loss:2.0631 val_bpb:1.2215 train_time:138842ms step_avg:69.42ms",
             "legal_ttt val_loss:1.9123 val_bpb:1.1326 eval_time:178175ms"]
    log = parse_log("\n".join(lines), "vals.log")
    assert (log.train_time_ms.value, log.train_time_ms.line) == (138842, 2)
    log = parse_log("step:1999/2000 train_loss:2.1 train_time:138000ms\n" + "\n".join(lines), "both.log")
    assert (log.train_time_ms.value, log.train_time_ms.line) == (138000, 1)


def test_pgolf_code_hash_line():
    log = parse_log("code_sha256: " + "ab" * 32 + "\n", "p.log")
    assert log.code_sha256.value == "ab" * 32



def test_validation_tokens_with_thousands_separators():
    log = parse_log("Validation tokens: 40,540,160\n", "p.log")
    assert (log.val_tokens.value, log.val_tokens.line) == (40540160, 1)

LOG_LINES = st.sampled_from([
    "step:1/20000 train_loss:6.9408 train_time:24ms step_avg:23.99ms",
    "500/20000 train_loss: 3.0046 train_time: 0.8m tok/s: 7923282",
    "step:0/20000 val_loss:6.9370 val_bpb:4.0978 train_time:0ms step_avg:0.01ms",
    "stopping_early: wallclock_cap train_time:600038ms step:13780/20000",
    "Serialized model int8+zlib: 15815847 bytes (payload:17178912)",
    "Total submission size quantized+brotli: 15996664 bytes",
    "quantized_ttt val_loss:2.79180191 val_bpb:1.08079352 eval_time:366525ms",
    "total_eval_time:508.8s", "gptq:reserving 8.0s, effective=592000ms", "Hyperparameters:",
    "  seed: 42", "Source code:", "=" * 100, "GPTQ:collected 67 Hessians in 3.5s", "",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LOG_LINES, st.text(max_size=80)), max_size=40))
def test_parser_never_raises_on_mixed_lines(lines):
    log = parse_log("\n".join(lines), "fuzz.log")
    log.score, log.eval_time_ms, log.train_time_ms, log.artifact_bytes, log.step_count  # noqa: B018


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_parser_never_raises_on_any_text(text):
    parse_log(text, "any.log").eval_time_ms  # noqa: B018
