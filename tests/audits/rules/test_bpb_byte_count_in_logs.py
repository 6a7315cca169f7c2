"""BPB_BYTE_ACCOUNTING from a log's own figures: val_loss x tokens / (ln 2 x val_bpb) is the bytes
its scores divide by, and the validation text has 151,078,222 whatever the tokenizer."""

import math

from support import audit_findings, by_rule, good_folder_files, record_log, write_folder

RULE = "BPB_BYTE_ACCOUNTING"
TOKENS = 40_540_160  # the sp8192 split


def _bpb(loss, text_bytes, tokens=TOKENS):
    """The val_bpb a run prints for this loss when it divides by `text_bytes`."""
    return loss * tokens / (math.log(2) * text_bytes)


def _eval_log(*scored, tokens=TOKENS, head="Validation tokens: {tokens:,}"):
    """A log in the style of a script that prints no training-loop validation: its token count,
    then one `NAME val_loss:X val_bpb:Y` line per (name, loss, bytes divided by)."""
    lines = [head.format(tokens=tokens), "step  1000/7000 | loss 3.3507 | 3.88 steps/s | 258s"]
    lines += [f"{name} val_loss:{loss:.8f} val_bpb:{_bpb(loss, b, tokens):.8f}" for name, loss, b in scored]
    return "\n".join(lines) + "\n"


def _audit(tmp_path, log_text, name="train_seed42.log"):
    files = good_folder_files()
    files[name] = log_text
    return [f for f in by_rule(audit_findings(write_folder(tmp_path / "2026-04-19_Run", files),
                                              only=frozenset({RULE})), RULE)
            if "divide by" in f.message]


def test_scores_that_divide_by_more_bytes_than_the_text_has_fail(tmp_path):
    # A table that counts the leading space twice: every score divides by 17.7% more bytes.
    log = _eval_log(("final_int6_roundtrip_exact", 3.10697387, 177_825_403),
                    ("final_int6_ttt_exact", 3.07705825, 177_825_403))
    [finding] = _audit(tmp_path, log)
    assert str(finding.severity) == "FAIL" and finding.file == "train_seed42.log"
    assert "divide by 177,825,40" in finding.message and "17.7% more than the 151,078,222" in finding.message
    # read at the middle of the two lines by the bytes they imply (which rounding decides)
    assert finding.line in (3, 4) and finding.evidence.startswith(
        f"1: Validation tokens: 40,540,160 / {finding.line}: final_int6_")


def test_the_records_own_logs_are_quiet(tmp_path):
    # record_log's lines are the 2026-04-09 record's: 151.06-151.08 M bytes
    assert _audit(tmp_path, record_log(42, bpb=1.0810)) == []


def test_the_training_loops_evaluations_decide_over_a_mixtures_score(tmp_path):
    # A byte-level mixture's bits per byte do not come from the val_loss printed beside them; the
    # model's own evaluations during training show the bytes are counted right.
    assert _audit(tmp_path, record_log(42, bpb=0.90)) == []
    inflated = record_log(42, bpb=0.90).replace("val_bpb: 3.4877", "val_bpb: 3.0000").replace(
        "val_bpb: 1.0886", "val_bpb: 0.9400").replace("val_bpb:1.08734790", "val_bpb:0.93800000")
    [finding] = _audit(tmp_path / "i", inflated)
    assert finding.line in (9, 11, 14)  # a plain evaluation's line: the two step lines, the diagnostic


def test_one_scored_line_or_two_that_disagree_are_not_judged(tmp_path):
    one = _eval_log(("ppm_sliding", 2.36687117, 173_490_000))
    disagree = _eval_log(("final_int6_roundtrip_exact", 3.10697387, 151_078_222),
                         ("ppm_mixture_exact", 3.07705825, 173_490_000))
    assert _audit(tmp_path / "one", one) == [] and _audit(tmp_path / "two", disagree) == []


def test_only_the_whole_split_of_a_known_text_is_judged(tmp_path):
    subset = _eval_log(("a_exact", 3.1, 177_825_403), ("b_exact", 3.0, 177_825_403), tokens=9_662_464)
    launch = _eval_log(("a_exact", 2.07, 155_770_000), ("b_exact", 2.06, 155_770_000), tokens=63_779_840,
                       head="val_loader:shards pattern=./data/datasets/fineweb10B_sp1024/fineweb_val_*.bin "
                            "tokens:{tokens}")
    unknown = _eval_log(("a_exact", 2.95, 197_940_000), ("b_exact", 2.94, 197_940_000), tokens=49_999_872,
                        head="val_tokens: {tokens}\n  datasets_dir: ./data/datasets/fineweb10B_sp10240")
    for name, log in (("subset", subset), ("launch", launch), ("unknown", unknown)):
        assert _audit(tmp_path / name, log) == [], name
