"""RECORD_RUN: a record's runs are shown on 8xH100 and on the challenge's validation text."""

from support import audit_findings, by_rule, good_folder_files, record_log, write_folder

GOOD = "2026-04-09_Good_Run"


def audit_with(tmp_path, change, track="track_10min_16mb"):
    """The good folder with every seed's log passed through `change`."""
    files = good_folder_files()
    for name in [n for n in files if n.endswith(".log")]:
        files[name] = change(files[name])
    return audit_findings(write_folder(tmp_path / "records" / track / GOOD, files))


def test_8xh100_logs_pass(tmp_path):
    gpus = "".join(f"|   {i}  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |\n" for i in range(8))
    assert by_rule(audit_with(tmp_path, lambda log: gpus + log), "RECORD_RUN") == []


def test_runs_on_a_cpu_fail_with_the_line_that_says_so(tmp_path):
    def cpu(log):
        return log.replace("  world_size: 8", "  world_size: 1") + "device: cpu (x86_64) x1\n"
    f = by_rule(audit_with(tmp_path, cpu), "RECORD_RUN", "FAIL")
    assert len(f) == 1 and "no 8xH100 run" in f[0].message and "cpu (x86_64)" in f[0].message
    assert f[0].file == "train_seed314.log" and f[0].line == 4 and "non-record track" in f[0].hint


def test_one_gpu_runs_fail_but_not_on_the_non_record_track(tmp_path):
    def one(log):
        return log.replace("  world_size: 8", "  world_size: 1")
    assert by_rule(audit_with(tmp_path, one), "RECORD_RUN", "FAIL")
    assert by_rule(audit_with(tmp_path / "n", one, "track_non_record_16mb"), "RECORD_RUN") == []


def test_a_one_gpu_try_beside_the_8_gpu_seeds_is_left_out(tmp_path):
    files = good_folder_files()
    files["try_1gpu.log"] = record_log(42, bpb=1.2).replace("  world_size: 8", "  world_size: 1")
    findings = audit_findings(write_folder(tmp_path / "records/track_10min_16mb" / GOOD, files))
    assert by_rule(findings, "RECORD_RUN") == []
    assert by_rule(findings, "SUBMISSION_JSON_MISMATCH") == []


def test_other_gpus_or_no_hardware_warn(tmp_path):
    def h200(log):
        return log.replace("  world_size: 8", "  world_size: 8\ndevice: NVIDIA H200 x8")
    f = by_rule(audit_with(tmp_path, h200), "RECORD_RUN")
    assert [str(x.severity) for x in f] == ["WARN"] and "H200" in f[0].message
    def silent(log):
        return log.replace("  world_size: 8\n", "")
    f = by_rule(audit_with(tmp_path / "s", silent), "RECORD_RUN")
    assert [str(x.severity) for x in f] == ["WARN"] and "no line shows the hardware" in f[0].message


def test_a_score_on_a_small_other_text_fails(tmp_path):
    def sample(log):
        return (log.replace("  datasets_dir: ./data/datasets/fineweb10B_sp8192\n", "  data_path: ./kjv\n")
                .replace("val_tokens: 40540160", "val_tokens: 20224"))
    f = by_rule(audit_with(tmp_path, sample), "RECORD_RUN", "FAIL")
    assert len(f) == 1 and "20,224 validation tokens" in f[0].message and "151 MB" in f[0].message
    def caseops(log):
        return log.replace("val_tokens: 40540160", "val_tokens: 47851520").replace(
            "fineweb10B_sp8192", "fineweb10B_sp8192_caseops")
    assert by_rule(audit_with(tmp_path / "c", caseops), "RECORD_RUN") == []


def test_the_headline_leaves_out_other_hardware_and_ablations_by_content(tmp_path):
    from audits import submission
    from audits.submission import runs
    files = good_folder_files()
    files["a.log"] = record_log(7, bpb=1.20).replace("  world_size: 8", "  world_size: 1")
    files["b.log"] = record_log(8, bpb=1.09, phases=(("quantized_sliding_window", 120961),))
    head = runs.headline(submission.load(write_folder(tmp_path / "records/track_10min_16mb" / GOOD, files)))
    assert sorted(head.logs) == [42, 314, 999]
    assert head.apart["a.log"].startswith("1 GPU(s) at line ")
    assert head.apart["b.log"].startswith("final pass quantized_sliding_window at line ")
