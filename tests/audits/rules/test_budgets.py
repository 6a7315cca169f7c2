"""ARTIFACT_OVER_CAP, ARTIFACT_LITERAL_OVER_CAP, TRAIN/EVAL_OVER_BUDGET, GPTQ_CALIB_AFTER_BUDGET, VAL_SUBSET."""

import json
import random

from audits import submission
from audits.submission import codesize
from support import audit_findings, by_rule, good_folder_files, record_log, submission_json, write_folder

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
    # one cause (the shipped code), reported once with every seed log's figure and line
    assert len(f) == 1 and f[0].file == "train_seed314.log"
    logs = ("train_seed42.log", "train_seed314.log", "train_seed999.log")
    assert all(f"{log}: " in f[0].message for log in logs)
    assert all(line.split(":")[0] in logs and line.split(":")[1].isdigit()
               for line in f[0].evidence.splitlines())
    assert f[0].message.count("over the cap") == 3 and "code bytes" in f[0].message


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


def test_a_log_of_one_gpu_over_the_budget_is_noted_unless_even_perfect_scaling_breaks_it(tmp_path):
    # the budgets are on 8xH100: one GPU's time divided by 8 is the best an 8-GPU run could do
    # (that no 8xH100 run is shown is RECORD_RUN's finding)
    one_gpu = record_log(42, bpb=1.081, phases=(("quantized_ttt", 2_458_400),)).replace(
        "world_size: 8", "world_size: 1")
    findings = with_log(tmp_path, one_gpu)
    f = by_rule(findings, "EVAL_OVER_BUDGET")
    assert [str(x.severity) for x in f] == ["INFO"]
    assert "on 1 GPU(s)" in f[0].message and "307.3 s" in f[0].message
    far = one_gpu.replace("eval_time:2458400ms", "eval_time:65808175ms")
    f = by_rule(with_log(tmp_path / "far", far), "EVAL_OVER_BUDGET")
    assert [str(x.severity) for x in f] == ["FAIL"] and "8226.0 s" in f[0].message
    slow_train = record_log(42, bpb=1.081, train_ms=4_800_000).replace("world_size: 8", "world_size: 1")
    assert [str(x.severity) for x in by_rule(with_log(tmp_path / "t", slow_train), "TRAIN_OVER_BUDGET")] \
        == ["INFO"]
    eight = record_log(42, bpb=1.081, phases=(("quantized_ttt", 2_458_400),))
    assert [str(x.severity) for x in by_rule(with_log(tmp_path / "eight", eight), "EVAL_OVER_BUDGET")] \
        == ["FAIL"]


def test_a_single_phase_timed_by_a_bare_time_field_counts(tmp_path):
    log = record_log(42, bpb=1.081) + "final_slot val_loss:1.1737 val_bpb:0.6951 steps:64 time:825384ms\n"
    f = by_rule(with_log(tmp_path, log), "EVAL_OVER_BUDGET", "FAIL")
    assert "final_slot 825384ms" in f[0].evidence


def test_calibration_timed_as_calibrated_layers_after_the_stop_fails(tmp_path):
    log = record_log(42, bpb=1.081, train_ms=600_038, reserve_s=None, hessian_s=None)
    log = log.replace("val_tokens:", "gptq:calibrating with training data...\n"
                      "gptq:calibrated 68 layers in 3.4s\nval_tokens:", 1)
    assert by_rule(with_log(tmp_path, log), "GPTQ_CALIB_AFTER_BUDGET", "FAIL")


def test_gptq_after_budget_without_reserve_fails(tmp_path):
    f = by_rule(with_log(tmp_path, record_log(42, bpb=1.081, train_ms=599_900, reserve_s=None, hessian_s=9.0)),
                "GPTQ_CALIB_AFTER_BUDGET")
    assert [str(x.severity) for x in f] == ["FAIL"]


CALIBRATES_AFTER_THE_LOOP = """import glob
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

TRAIN_FILES = "./data/datasets/fineweb10B_sp1024/fineweb_train_*.bin"


def collect_hessians(model, tokens):
    hessians = {}

    def hook(mod, inputs, output):
        act = inputs[0].reshape(-1, inputs[0].shape[-1]).float()
        hessians[mod] = hessians.get(mod, 0) + act.T @ act
    handle = model[1].register_forward_hook(hook)
    with torch.no_grad():
        for b in range(8):
            model(tokens[b * 64:(b + 1) * 64][None])
    handle.remove()
    return hessians


def main():
    train = torch.cat([torch.from_numpy(np.fromfile(f, dtype=np.uint16, offset=1024).astype(np.int64))
                       for f in sorted(glob.glob(TRAIN_FILES))])
    model = nn.Sequential(nn.Embedding(1024, 64), nn.Linear(64, 1024))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for step in range(20000):
        seg = train[step * 64:(step + 1) * 64 + 1]
        opt.zero_grad()
        F.cross_entropy(model(seg[:-1]), seg[1:]).backward()
        opt.step()
        if time.perf_counter() - start > 600:
            break
    hessians = collect_hessians(model, train[-512:])
    torch.save(hessians, "hessians.pt")


if __name__ == "__main__":
    main()
"""


def test_gptq_after_budget_names_the_calibration_call_and_quotes_the_log(tmp_path):
    log = record_log(42, bpb=1.081, train_ms=599_900, reserve_s=None, hessian_s=9.0)
    [f] = by_rule(with_log(tmp_path, log, **{"train_gpt.py": CALIBRATES_AFTER_THE_LOOP}), "GPTQ_CALIB_AFTER_BUDGET")
    call = 1 + CALIBRATES_AFTER_THE_LOOP.split("\n").index("    hessians = collect_hessians(model, train[-512:])")
    assert (f.file, f.line, str(f.severity)) == ("train_gpt.py", call, "FAIL")
    assert f"{call}: hessians = collect_hessians(model, train[-512:])" in f.evidence
    assert "train_seed42.log:" in f.evidence and "GPTQ:collected 67 Hessians in 9.0s" in f.evidence
    # without code that calibrates on training data, the log line is the place
    [bare] = by_rule(with_log(tmp_path / "bare", log), "GPTQ_CALIB_AFTER_BUDGET")
    assert bare.file == "train_seed42.log" and "GPTQ:collected" in bare.evidence


# the helper opens the training shards itself: no call hands it the data, so the finding names
# the first call that starts it (not the model call inside it)
READS_ITS_OWN_BATCHES = CALIBRATES_AFTER_THE_LOOP.replace(
    "def collect_hessians(model, tokens):\n", "def collect_hessians(model):\n    tokens = torch.cat([torch.from_numpy("
    "np.fromfile(f, dtype=np.uint16, offset=1024).astype(np.int64)) for f in sorted(glob.glob(TRAIN_FILES))])\n"
).replace("collect_hessians(model, train[-512:])", "collect_hessians(model)")


def test_gptq_after_budget_names_the_call_of_a_helper_that_reads_its_own_batches(tmp_path):
    assert READS_ITS_OWN_BATCHES.count("collect_hessians(model)") == 2
    log = record_log(42, bpb=1.081, train_ms=599_500, reserve_s=0.5, hessian_s=3.5)
    [f] = by_rule(with_log(tmp_path, log, **{"train_gpt.py": READS_ITS_OWN_BATCHES}), "GPTQ_CALIB_AFTER_BUDGET")
    call = 1 + READS_ITS_OWN_BATCHES.split("\n").index("    hessians = collect_hessians(model)")
    assert (f.file, f.line, str(f.severity)) == ("train_gpt.py", call, "WARN")


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


def _non_record(tmp_path, log_text, **more):
    files = good_folder_files()
    files["train_seed42.log"] = log_text
    files.update(more)
    root = tmp_path / "records" / "track_non_record_16mb" / GOOD
    return audit_findings(write_folder(root, files))


def test_the_non_record_track_has_no_time_limit(tmp_path):
    # A 4-hour run with a 13-minute evaluation: noted, never a FAIL, on the non-record track.
    log = record_log(42, bpb=1.081, train_ms=14_400_039, phases=(("final_sliding", 768_782),))
    f = _non_record(tmp_path, log)
    assert [str(x.severity) for x in by_rule(f, "TRAIN_OVER_BUDGET")] == ["INFO"]
    assert [str(x.severity) for x in by_rule(f, "EVAL_OVER_BUDGET")] == ["INFO"]
    assert "no 600 s limit" in by_rule(f, "TRAIN_OVER_BUDGET")[0].message
    assert by_rule(f, "GPTQ_CALIB_AFTER_BUDGET") == []


def test_the_same_run_on_the_record_track_fails_both_budgets(tmp_path):
    log = record_log(42, bpb=1.081, train_ms=14_400_039, phases=(("final_sliding", 768_782),))
    f = with_log(tmp_path, log)
    assert by_rule(f, "TRAIN_OVER_BUDGET", "FAIL") and by_rule(f, "EVAL_OVER_BUDGET", "FAIL")


def test_a_folder_out_of_place_declares_its_track_in_its_readme_title(tmp_path):
    log = record_log(42, bpb=1.081, train_ms=14_400_039)
    files = {"README.md": "# Notable Non-Record Submission: a 4-hour run\n\nIt ran long.\n"}
    f = with_log(tmp_path, log, **files)
    assert [str(x.severity) for x in by_rule(f, "TRAIN_OVER_BUDGET")] == ["INFO"]


def test_a_non_record_mention_outside_the_title_does_not_change_the_track(tmp_path):
    log = record_log(42, bpb=1.081, train_ms=14_400_039)
    files = {"README.md": "# A record\n\n> Status: non-record preliminary run, rerun pending.\n"}
    assert by_rule(with_log(tmp_path, log, **files), "TRAIN_OVER_BUDGET", "FAIL")


def test_submission_json_declares_the_non_record_track_by_a_key_or_its_name(tmp_path):
    for i, extra in enumerate(({"non_record_reason": "2xH100 only"}, {"name": "MDLM (Non-Record)"})):
        files = good_folder_files()
        claims = json.loads(files["submission.json"])
        claims.update(extra)
        files["submission.json"] = json.dumps(claims)
        sub = submission.load(write_folder(tmp_path / f"{GOOD}{i}", files))
        assert sub.track == "non_record_16mb" and "submission.json" in sub.track_origin


def test_only_the_code_that_runs_is_counted(tmp_path):
    # A wrapped entry script, the module it imports, and a readable copy nobody runs: the copy's
    # 60 KB of incompressible text would push the artifact over the cap if it were counted.
    rng = random.Random(0)
    blob = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(60000))
    files = {"train_gpt.py": codesize.wrap("import helpers\n\nhelpers.run()\n"),
             "helpers.py": "def run():\n    return 1\n",
             "train_gpt_readable.py": f"DATA = '{blob}'\n"}
    log = record_log(42, bpb=1.081, model_bytes=15_970_000, code_bytes=100)
    f = with_log(tmp_path, log, **files)
    assert by_rule(f, "ARTIFACT_OVER_CAP") == [] and by_rule(f, "ARTIFACT_LITERAL_OVER_CAP") == []
    files["helpers.py"] = f"DATA = '{blob}'\n"  # now the imported module is the large one
    f = with_log(tmp_path / "b", log, **files)
    assert by_rule(f, "ARTIFACT_OVER_CAP", "FAIL")
    assert "train_gpt.py" in by_rule(f, "ARTIFACT_OVER_CAP")[0].evidence
    assert "helpers.py" in by_rule(f, "ARTIFACT_OVER_CAP")[0].evidence


def test_a_diagnostic_phase_that_produced_the_claimed_score_counts(tmp_path):
    phases = (("pre_quant_sliding_window", 65_808_175), ("quantized", 42_290))
    log = record_log(42, bpb=1.081, phases=phases)
    claimed = with_log(tmp_path, log, **{"submission.json": submission_json(1.081)})
    assert by_rule(claimed, "EVAL_OVER_BUDGET", "FAIL")
    assert "the claimed score" in by_rule(claimed, "EVAL_OVER_BUDGET")[0].evidence
    other = with_log(tmp_path / "b", log.replace("pre_quant_sliding_window val_loss:2.79180191 val_bpb:1.08100000",
                                                 "pre_quant_sliding_window val_loss:2.79 val_bpb:1.09"),
                     **{"submission.json": submission_json(1.081)})
    assert by_rule(other, "EVAL_OVER_BUDGET") == []


def test_an_earlier_attempt_of_a_seed_over_budget_is_noted_not_failed(tmp_path):
    # seed 42 has two logs: the one that shows the claimed score ran in time; a 40-minute first
    # attempt with another score is not the claimed run
    slow = record_log(42, bpb=1.0927, train_ms=2_400_107)
    f = by_rule(with_log(tmp_path, record_log(42, bpb=1.0810), **{"attempt_v1.txt": slow}),
                "TRAIN_OVER_BUDGET")
    assert [str(x.severity) for x in f] == ["INFO"]
    assert "attempt_v1.txt: training took 2400.1 s" in f[0].message
    assert "not the claimed run: train_seed42.log shows" in f[0].message


def test_the_log_that_shows_the_claim_over_budget_still_fails(tmp_path):
    slow = record_log(42, bpb=1.0810, train_ms=2_400_107)
    f = by_rule(with_log(tmp_path, slow, **{"attempt_v1.txt": record_log(42, bpb=1.0927)}),
                "TRAIN_OVER_BUDGET", "FAIL")
    assert len(f) == 1 and f[0].file == "train_seed42.log"
