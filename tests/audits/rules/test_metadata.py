"""SUBMISSION_JSON_*, LOG_SOURCE_MISMATCH, FEWER_THAN_3_SEEDS, NOT_SIGNIFICANT, MISSING_REQUIREMENT."""

import hashlib
import json

from audits import api
from audits.submission import codesize
from audits.context import AuditOptions, Baseline
from audits.report import report_dict
from support import audit_findings, by_rule, good_folder_files, record_log, submission_json, write_folder

GOOD = "2026-04-09_Good_Run"


def folder(tmp_path, **changes):
    files = good_folder_files()
    files.update(changes)
    return write_folder(tmp_path / GOOD, files)


def test_good_folder_is_clean(tmp_path):
    f = audit_findings(folder(tmp_path))
    assert [x for x in f if x.severity > 0] == []


def test_invalid_json_and_missing_keys(tmp_path):
    assert by_rule(audit_findings(folder(tmp_path, **{"submission.json": "{nope"})),
                   "SUBMISSION_JSON_INVALID", "FAIL")
    f = by_rule(audit_findings(folder(tmp_path / "b", **{"submission.json": json.dumps({"val_bpb": 1.08})})),
                "SUBMISSION_JSON_INVALID")
    assert {x.message.split("'")[1] for x in f} == {"author", "github_id", "name", "date"}
    assert {str(x.severity) for x in f} == {"WARN"}  # early records were merged with other fields


def test_early_format_fields_are_warnings_that_name_the_rename(tmp_path):
    claims = {"author": "a", "github_id": "a", "run_name": "x", "val_bpb": 1.081, "date": "2026-03-20"}
    f = by_rule(audit_findings(folder(tmp_path, **{"submission.json": json.dumps(claims)})),
                "SUBMISSION_JSON_INVALID")
    assert [(str(x.severity), x.message) for x in f] == [
        ("WARN", "submission.json: missing 'name' (found 'run_name': rename it to 'name')")]


def test_headline_bpb_off_by_more_than_tolerance_fails_with_the_line(tmp_path):
    f = by_rule(audit_findings(folder(tmp_path, **{"submission.json": submission_json(1.0790)})),
                "SUBMISSION_JSON_MISMATCH", "FAIL")
    assert len(f) == 1 and f[0].file == "submission.json" and f[0].line == 6
    assert "1.081" in f[0].message


def test_a_slip_within_a_thousandth_warns_and_a_claim_no_line_shows_fails(tmp_path):
    # merged records claim 0.0002-0.0006 off the logs' mean; no significance decision turns on it
    slip = by_rule(audit_findings(folder(tmp_path, **{"submission.json": submission_json(1.0815)})),
                   "SUBMISSION_JSON_MISMATCH")
    assert [str(x.severity) for x in slip] == ["WARN"] and "slip" in slip[0].message
    far = by_rule(audit_findings(folder(tmp_path / "far", **{"submission.json": submission_json(1.0795)})),
                  "SUBMISSION_JSON_MISMATCH")
    assert [str(x.severity) for x in far] == ["FAIL"] and "no scored line" in far[0].message


def test_a_record_whose_logs_all_stop_before_the_score_misses_its_log(tmp_path):
    cut = {f"train_seed{s}.log": record_log(s, complete=False) for s in (42, 314, 999)}
    f = by_rule(audit_findings(folder(tmp_path, **cut)), "MISSING_FILES", "FAIL")
    assert len(f) == 1 and "no complete train log" in f[0].message


def test_headline_within_printed_precision_is_quiet(tmp_path):
    f = audit_findings(folder(tmp_path, **{"submission.json": submission_json(1.08100004)}))
    assert by_rule(f, "SUBMISSION_JSON_MISMATCH") == []


def test_headline_equal_to_one_seed_only_is_a_warning(tmp_path):
    f = by_rule(audit_findings(folder(tmp_path, **{"submission.json": submission_json(1.0808)})),
                "SUBMISSION_JSON_MISMATCH")
    assert [str(x.severity) for x in f] == ["WARN"] and "seed 999" in f[0].message


def test_per_seed_claims_are_checked_against_that_seeds_log(tmp_path):
    claims = submission_json(1.081, seed_results={"42": {"val_bpb": 1.081, "artifact_bytes": 15991930},
                                                  "314": {"val_bpb": 1.0812, "artifact_bytes": 1},
                                                  "7": {"val_bpb": 1.08}})
    f = by_rule(audit_findings(folder(tmp_path, **{"submission.json": claims})), "SUBMISSION_JSON_MISMATCH")
    messages = " | ".join(x.message for x in f)
    assert "seed 314: 'artifact_bytes' is 1" in messages and "seed 7" in messages
    assert "seed 42" not in messages


def test_bytes_total_must_match_the_logs(tmp_path):
    bad = by_rule(audit_findings(folder(tmp_path, **{"submission.json": submission_json(1.081, bytes_total=15900000)})),
                  "SUBMISSION_JSON_MISMATCH", "WARN")
    assert "bytes_total" in bad[0].message
    ok = audit_findings(folder(tmp_path / "ok", **{"submission.json": submission_json(1.081, bytes_total=15991930)}))
    assert by_rule(ok, "SUBMISSION_JSON_MISMATCH") == []


def test_a_claim_that_is_another_scored_metric_of_every_log_is_accepted(tmp_path):
    # Each log prints a sliding-window score, then a TTT score last; the author claims the former.
    phases = (("quantized", 25515), ("quantized_sliding_window", 120961), ("quantized_ttt", 366525))
    files = {f"train_seed{s}.log": record_log(s, bpb=1.081, phases=phases).replace(
        "quantized_ttt val_loss:2.79180191 val_bpb:1.081", "quantized_ttt val_loss:3.07 val_bpb:1.336")
        for s in (42, 314, 999)}
    assert "quantized_ttt val_loss:3.07 val_bpb:1.33600000" in files["train_seed42.log"]
    claims = submission_json(1.081, seed_results={"42": {"val_bpb": 1.081}})
    f = audit_findings(folder(tmp_path, **files, **{"submission.json": claims}))
    assert by_rule(f, "SUBMISSION_JSON_MISMATCH") == []


def test_a_headline_resting_on_logs_not_shipped_is_a_warning(tmp_path):
    files = {k: v for k, v in good_folder_files().items() if k != "train_seed999.log"}
    files["submission.json"] = submission_json(1.0795, seeds=[42, 314, 7])
    f = by_rule(audit_findings(write_folder(tmp_path / GOOD, files)), "SUBMISSION_JSON_MISMATCH")
    assert [str(x.severity) for x in f] == ["WARN"] and "not shipped (7)" in f[0].message


def test_log_source_mismatch_with_the_shipped_script(tmp_path):
    script = "import torch\n\nif __name__ == '__main__':\n    pass\n"
    good_hash = hashlib.sha256(script.encode()).hexdigest()
    ok = audit_findings(folder(tmp_path, **{"train_seed42.log": record_log(42, bpb=1.0810, code_sha256=good_hash)}))
    assert by_rule(ok, "LOG_SOURCE_MISMATCH") == []
    bad = audit_findings(folder(tmp_path / "b",
                                **{"train_seed42.log": record_log(42, bpb=1.0810, code_sha256="0" * 64)}))
    assert by_rule(bad, "LOG_SOURCE_MISMATCH", "FAIL")[0].file == "train_seed42.log"


def test_embedded_source_compared_with_the_shipped_script(tmp_path):
    script = "import torch\n\nif __name__ == '__main__':\n    pass\n"
    embed = lambda code, seed: code + "\n" + "=" * 100 + "\n" + record_log(seed, bpb=1.0810)  # noqa: E731
    ok = audit_findings(folder(tmp_path, **{"train_seed42.log": embed(script, 42)}))
    assert by_rule(ok, "LOG_SOURCE_MISMATCH") == []
    other = script.replace("pass", "print(1)")
    bad = audit_findings(folder(tmp_path / "b", **{"train_seed42.log": embed(other, 42)}))
    assert by_rule(bad, "LOG_SOURCE_MISMATCH", "WARN")  # merged records carry earlier revisions
    ablation = audit_findings(folder(tmp_path / "c", **{"train_seed42.log": embed(other, 42),
                                                        "train_ablation.py": other}))
    assert by_rule(ablation, "LOG_SOURCE_MISMATCH") == []  # the log ran the other shipped script


def _source_block(code: str, seed: int, closed: bool) -> str:
    """The later log dialect: the hyperparameters, then a `Source code:` block between rules,
    closed by a third rule or running straight into the log's own lines."""
    rule = "=" * 100
    return (f"Hyperparameters:\n  seed: {seed}\n{rule}\nSource code:\n{rule}\n{code}"
            + (f"{rule}\n" if closed else "") + record_log(seed, bpb=1.0810))


def test_a_source_block_between_rules_is_read_whole(tmp_path):
    script = "import torch\n\nif __name__ == '__main__':\n    pass\n"
    for closed in (True, False):
        ok = audit_findings(folder(tmp_path / str(closed), **{"train_seed42.log": _source_block(script, 42, closed)}))
        assert by_rule(ok, "LOG_SOURCE_MISMATCH") == [], closed
        other = script.replace("pass", "print(1)")
        bad = by_rule(audit_findings(folder(tmp_path / f"b{closed}", **{
            "train_seed42.log": _source_block(other, 42, closed)})), "LOG_SOURCE_MISMATCH")
        assert [str(x.severity) for x in bad] == ["WARN"] and "(0 lines)" not in bad[0].message
        assert bad[0].line == 6  # the first line of the source itself


def test_fewer_than_three_seeds_and_duplicated_logs(tmp_path):
    files = good_folder_files(seeds=(42, 314), bpbs=(1.081, 1.0812))
    files["train.log"] = files["train_seed42.log"]
    f = by_rule(audit_findings(write_folder(tmp_path / GOOD, files)), "FEWER_THAN_3_SEEDS", "WARN")
    messages = " | ".join(x.message for x in f)
    assert "2 distinct seed(s)" in messages and "are the same log" in messages


def test_three_seeds_quiet_and_non_record_track_exempt(tmp_path):
    assert by_rule(audit_findings(folder(tmp_path)), "FEWER_THAN_3_SEEDS") == []
    files = good_folder_files(seeds=(42,), bpbs=(1.081,))
    f = audit_findings(write_folder(tmp_path / "records/track_non_record_16mb" / GOOD, files))
    assert by_rule(f, "FEWER_THAN_3_SEEDS") == []


def test_not_significant_against_a_close_baseline(tmp_path):
    sub = folder(tmp_path)
    weak = by_rule(audit_findings(sub, baseline=Baseline((1.0820,), "prev")), "NOT_SIGNIFICANT")
    assert str(weak[0].severity) == "FAIL" and "p=" in weak[0].message and "threshold p<0.01" in weak[0].message
    strong = by_rule(audit_findings(sub, baseline=Baseline((1.0900, 1.0905, 1.0895), "prev")), "NOT_SIGNIFICANT")
    assert str(strong[0].severity) == "INFO" and strong[0].message.startswith("significant")


def test_not_significant_threshold_is_configurable(tmp_path):
    sub = folder(tmp_path)
    base = Baseline((1.0872,), "prev")  # ~0.0062 bpb better: 0.005 nats is ~0.0030 bpb here
    strict = by_rule(audit_findings(sub, baseline=base, p_threshold=1e-6), "NOT_SIGNIFICANT")
    loose = by_rule(audit_findings(sub, baseline=base, p_threshold=0.25), "NOT_SIGNIFICANT")
    assert str(strict[0].severity) == "FAIL" and str(loose[0].severity) == "INFO"


def test_the_shipped_leaderboard_is_the_default_baseline(tmp_path):
    # dated after the 1.0822 record of 2026-04-08 and not 0.005 nats better: submit as non-record
    files = good_folder_files(bpbs=(1.0815, 1.0817, 1.0813))
    late = by_rule(audit_findings(write_folder(tmp_path / "2026-04-12_Late_Run", files)), "NOT_SIGNIFICANT")
    assert [str(x.severity) for x in late] == ["FAIL"] and "1.0734" in late[0].message
    assert "non-record track" in late[0].hint
    # the folder that is a leaderboard row (its score, within days of the row's date) is noted only
    own = by_rule(audit_findings(folder(tmp_path)), "NOT_SIGNIFICANT")
    assert [str(x.severity) for x in own] == ["INFO"] and "accepted as a record" in own[0].message
    # a baseline given wins over the leaderboard
    given = by_rule(audit_findings(write_folder(tmp_path / "g" / "2026-04-12_Late_Run", files),
                                   baseline=Baseline((1.0900,), "prev")), "NOT_SIGNIFICANT")
    assert [str(x.severity) for x in given] == ["INFO"] and "(prev)" in given[0].message


def test_missing_requirement(tmp_path):
    script = ("import os, torch\nfrom flash_attn_interface import flash_attn_func\n"
              "try:\n    import zstandard\nexcept ImportError:\n    zstandard = None\nimport helper\n\n\n"
              "def compress(b):\n    import brotli\n    return brotli.compress(b)\n")
    f = by_rule(audit_findings(folder(tmp_path, **{"train_gpt.py": script, "helper.py": "x = 1\n"})),
                "MISSING_REQUIREMENT", "WARN")
    assert [(x.file, x.line) for x in f] == [("train_gpt.py", 11)] and "brotli" in f[0].message
    ok = audit_findings(folder(tmp_path / "ok", **{"train_gpt.py": script, "helper.py": "x = 1\n",
                                                   "requirements.txt": "# extras\nBrotli>=1.1\n"}))
    assert by_rule(ok, "MISSING_REQUIREMENT") == []


def test_a_missing_requirement_in_a_wrapper_names_the_line_of_its_payload(tmp_path):
    # the line is the payload's (the shipped wrapper has two), and the finding says so
    script = "import os\n\n\ndef compress(b):\n    import brotli\n    return brotli.compress(b)\n"
    f = by_rule(audit_findings(folder(tmp_path, **{"train_gpt.py": codesize.wrap(script)})),
                "MISSING_REQUIREMENT", "WARN")
    assert [(x.file, x.line) for x in f] == [("train_gpt.py", 5)]
    assert f[0].via is not None and f[0].via.startswith("line 5 of the source unwrapped from train_gpt.py")


def test_an_ablation_rerun_of_a_seed_is_not_averaged_into_the_headline(tmp_path):
    files = good_folder_files()
    files["ablation_no_ttt_seed42.log"] = record_log(42, bpb=1.2)  # a rerun of seed 42, worse
    report = api.audit([str(write_folder(tmp_path / GOOD, files))], AuditOptions())
    row = report_dict(report)["submissions"][0]
    assert len(row["seeds"]) == 4 and abs(row["val_bpb_mean"] - 1.0810) < 1e-6
    assert by_rule(report.submissions[0].findings, "SUBMISSION_JSON_MISMATCH") == []


def test_a_study_claims_the_configuration_its_per_seed_results_name(tmp_path):
    # Logs of two configurations; the claim is the second's two seeds, and the result the claim
    # gives for seed 42 is the log whose seed line reads 1337.
    files = {k: v for k, v in good_folder_files().items() if not k.endswith(".log")}
    files["short_seed42.log"] = record_log(42, bpb=1.30)
    files["long_seed42.log"] = record_log(1337, bpb=1.4703)
    files["long_s7.log"] = record_log(7, bpb=1.4716)
    files["submission.json"] = submission_json(1.47095, seeds=[42, 7], seed_results={
        "42": {"val_bpb": 1.4703}, "7": {"val_bpb": 1.4716}})
    f = by_rule(audit_findings(write_folder(tmp_path / GOOD, files)), "SUBMISSION_JSON_MISMATCH")
    assert [str(x.severity) for x in f] == ["WARN"]
    assert "shown by long_seed42.log, not by short_seed42.log" in f[0].message


def test_a_module_the_script_imports_at_the_top_and_nobody_ships_blocks(tmp_path):
    script = "import torch\nfrom context_features import SmearGate\n\nif __name__ == '__main__':\n    pass\n"
    f = by_rule(audit_findings(folder(tmp_path, **{"train_gpt.py": script})), "MISSING_REQUIREMENT")
    assert [(str(x.severity), x.line) for x in f] == [("FAIL", 2)]
    assert "the script fails on import" in f[0].message
    shipped = audit_findings(folder(tmp_path / "ok", **{"train_gpt.py": script,
                                                        "context_features.py": "SmearGate = None\n"}))
    assert by_rule(shipped, "MISSING_REQUIREMENT") == []


def test_a_module_the_readme_installs_is_warned_not_blocking(tmp_path):
    script = "import torch\nimport zstandard as zstd\n\nif __name__ == '__main__':\n    pass\n"
    readme = "# Run\n\nRequires: `pip install zstandard`\n"
    f = by_rule(audit_findings(folder(tmp_path, **{"train_gpt.py": script, "README.md": readme})),
                "MISSING_REQUIREMENT")
    assert [(str(x.severity), x.line) for x in f] == [("WARN", 2)]
    assert "only README.md:3 installs it" in f[0].message
    launch = {"train_gpt.py": script, "run.sh": "pip install -q 'zstandard>=0.22' brotli\ntorchrun train_gpt.py\n"}
    f = by_rule(audit_findings(folder(tmp_path / "sh", **launch)), "MISSING_REQUIREMENT")
    assert [(str(x.severity), x.line) for x in f] == [("WARN", 2)] and "run.sh:1" in f[0].message
    other = by_rule(audit_findings(folder(tmp_path / "other", **{"train_gpt.py": script,
                                                                 "README.md": "pip install brotli\n"})),
                    "MISSING_REQUIREMENT")
    assert [str(x.severity) for x in other] == ["FAIL"]  # what the README installs is another module
