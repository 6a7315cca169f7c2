"""ARTIFACT_OVER_CAP, ARTIFACT_LITERAL_OVER_CAP, TRAIN/EVAL_OVER_BUDGET, GPTQ_CALIB_AFTER_BUDGET, VAL_SUBSET."""

from support import audit_findings, by_rule, good_folder_files, record_log, write_folder

GOOD = "2026-04-09_Good_Run"


def with_log(tmp_path, log_text, seed=42, **more):
    files = good_folder_files()
    files[f"train_seed{seed}.log"] = log_text
    files.update(more)
    return audit_findings(write_folder(tmp_path / GOOD, files))


def test_model_plus_computed_code_over_the_cap(tmp_path):
    # the log's own total is under the cap, but the shipped code is large and incompressible
    import random
    rng = random.Random(0)
    blob = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(60000))
    script = f"DATA = '{blob}'\n\nif __name__ == '__main__':\n    pass\n"
    f = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, model_bytes=15_970_000, code_bytes=100),
                         **{"train_gpt.py": script}), "ARTIFACT_OVER_CAP", "FAIL")
    assert {x.file for x in f} == {"train_seed42.log", "train_seed314.log", "train_seed999.log"}
    assert all("over the cap" in x.message and "code bytes" in x.message for x in f)


def test_log_total_over_the_cap_fails(tmp_path):
    f = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, model_bytes=15_990_000, code_bytes=20_000)),
                "ARTIFACT_OVER_CAP", "FAIL")
    assert "16,010,000" in f[0].message and f[0].line is not None


def test_under_the_cap_is_quiet(tmp_path):
    f = with_log(tmp_path, record_log(42, bpb=1.081))
    assert by_rule(f, "ARTIFACT_OVER_CAP") == [] and by_rule(f, "ARTIFACT_LITERAL_OVER_CAP") == []


def test_literal_reading_warns_when_raw_code_pushes_over(tmp_path):
    script = "# " + "x" * 40_000 + "\nimport torch\n"  # compresses to almost nothing
    f = with_log(tmp_path, record_log(42, bpb=1.081, model_bytes=15_970_000, code_bytes=100),
                 **{"train_gpt.py": script})
    assert by_rule(f, "ARTIFACT_OVER_CAP") == []
    assert by_rule(f, "ARTIFACT_LITERAL_OVER_CAP", "WARN")


def test_train_over_budget(tmp_path):
    f = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, train_ms=602_048)), "TRAIN_OVER_BUDGET")
    assert [str(x.severity) for x in f] == ["FAIL"] and "602.0 s" in f[0].message


def test_train_overshoot_at_a_wallclock_stop_is_info(tmp_path):
    f = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, train_ms=600_128, reserve_s=None, hessian_s=None)),
                "TRAIN_OVER_BUDGET")
    assert [str(x.severity) for x in f] == ["INFO"]


def test_train_without_stop_line_uses_last_step(tmp_path):
    log = "seed:42\nstep:1/100 train_loss:6.9 train_time:600500ms step_avg:100ms\n" \
          "final val_loss:2.0 val_bpb:1.081 eval_time:1000ms\n"
    assert by_rule(with_log(tmp_path, log), "TRAIN_OVER_BUDGET", "FAIL")


def test_eval_over_budget_sums_phases_once(tmp_path):
    phases = (("quantized", 30_000), ("quantized_sliding_window", 150_000), ("quantized_ttt", 430_000))
    f = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, phases=phases)), "EVAL_OVER_BUDGET", "FAIL")
    assert "610.0 s" in f[0].message
    ok = with_log(tmp_path / "ok", record_log(42, bpb=1.081, phases=phases, total_eval_s=580.0))
    assert by_rule(ok, "EVAL_OVER_BUDGET") == []  # the log's own total wins over the sum


def test_gptq_after_budget_without_reserve_fails(tmp_path):
    f = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, train_ms=599_900, reserve_s=None, hessian_s=9.0)),
                "GPTQ_CALIB_AFTER_BUDGET")
    assert [str(x.severity) for x in f] == ["FAIL"]


def test_gptq_reserve_too_small_warns_and_enough_is_quiet(tmp_path):
    small = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, train_ms=599_500, reserve_s=0.5, hessian_s=3.5)),
                    "GPTQ_CALIB_AFTER_BUDGET")
    assert [str(x.severity) for x in small] == ["WARN"] and "at least 5 s" in small[0].hint
    ok = with_log(tmp_path / "ok", record_log(42, bpb=1.081, train_ms=592_054, reserve_s=8.0, hessian_s=3.5))
    assert by_rule(ok, "GPTQ_CALIB_AFTER_BUDGET") == []


def test_self_generated_calibration_after_the_stop_is_legal(tmp_path):
    log = record_log(42, bpb=1.081, train_ms=600_050, reserve_s=None, hessian_s=None).replace(
        "Serialized model quantized",
        "gptq:generating autoregressive calibration data (64 seqs x 2048 tokens, temp=0.8)...\n"
        "gptq:collected hessians for 68 layers (AR self-gen)\nSerialized model quantized")
    assert by_rule(with_log(tmp_path, log), "GPTQ_CALIB_AFTER_BUDGET") == []


def test_val_subset(tmp_path):
    bad = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, val_tokens=9_662_464)), "VAL_SUBSET", "FAIL")
    assert "23.8%" in bad[0].message
    trimmed = with_log(tmp_path / "t", record_log(42, bpb=1.081, val_tokens=40_540_160 - 3 * 2048))
    assert by_rule(trimmed, "VAL_SUBSET") == []
    unknown = with_log(tmp_path / "u", record_log(42, bpb=1.081, val_tokens=1_991_932, dataset="sample_sp1024"))
    assert [str(x.severity) for x in by_rule(unknown, "VAL_SUBSET")] == ["INFO"]


def test_the_non_record_track_has_no_time_budgets(tmp_path):
    """A 40-minute run with a 640 s evaluation and Hessians after the stop: illegal on the record
    track, the point of the non-record (unlimited compute) track. The size cap holds on both."""
    log = record_log(42, bpb=1.081, train_ms=2_400_107, reserve_s=None, hessian_s=9.0,
                     total_eval_s=640.0, model_bytes=15_990_000, code_bytes=20_000)
    files = good_folder_files()
    files["train_seed42.log"] = log
    rules = ("TRAIN_OVER_BUDGET", "EVAL_OVER_BUDGET", "GPTQ_CALIB_AFTER_BUDGET", "ARTIFACT_OVER_CAP")
    record = audit_findings(write_folder(tmp_path / "track_10min_16mb" / GOOD, files))
    assert all(by_rule(record, rule, "FAIL") for rule in rules)
    other = audit_findings(write_folder(tmp_path / "track_non_record_16mb" / GOOD, files))
    assert [rule for rule in rules if by_rule(other, rule)] == ["ARTIFACT_OVER_CAP"]
