"""One cause, one finding: the analysis' verdicts of one rule about one reading in one function
are reported once, with every line as evidence."""

from pathlib import Path

from audits import legality
from audits.submission import load
from support import audit_findings, by_rule, good_folder_files, write_folder

XOR_KEY = (Path(__file__).parents[2] / "fixtures" / "legality" / "ngram_target_in_key"
           / "ngram_xor_key.py").read_text(encoding="utf-8")
# the answer-keyed table read on two lines of the scoring function, not one
TWO_READS = XOR_KEY.replace(
    "        p_ng = full_counts[full_key] / np.maximum(ctx_counts[ctx_key], 1.0)\n",
    "        hits = full_counts[full_key]\n"
    "        seen = full_counts[full_key] > 0\n"
    "        p_ng = np.where(seen, hits, 0.0) / np.maximum(ctx_counts[ctx_key], 1.0)\n")


def test_reads_of_one_answer_keyed_table_are_one_finding_with_every_line(tmp_path):
    assert TWO_READS != XOR_KEY
    files = good_folder_files()
    files["train_gpt.py"] = TWO_READS
    folder = write_folder(tmp_path / "2026-04-09_Two_Reads", files)
    lines = sorted({v.site.position().start.line
                    for v in legality.analyse(load(folder)).of("NGRAM_TARGET_IN_KEY")
                    if v.kind == "target_in_key"})
    assert len(lines) >= 2  # the analysis reads two places
    [finding] = by_rule(audit_findings(folder), "NGRAM_TARGET_IN_KEY", "FAIL")
    key_line = 1 + TWO_READS.split("\n").index("        full_key = (ctx_hash ^ (tgt_np * PRIMES[0])) & mask  "
                                                "# expect: NGRAM_TARGET_IN_KEY FAIL")
    assert finding.line == key_line  # the finding names where the target enters the key
    assert f"the table read at line {lines[0]} " in finding.message
    assert all(f"{n}: " in finding.evidence for n in lines)
    assert f"the same at line{'s' if len(lines) > 2 else ''} {', '.join(map(str, lines[1:]))}" in finding.message
