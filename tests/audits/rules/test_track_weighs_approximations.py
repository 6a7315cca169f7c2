"""A bits-per-byte figure by a fixed bytes-per-token ratio, or a score of validation windows drawn
at random, is a FAIL on the record track, where the figure is a record claim, and a WARN outside
it, where an exploration may report an approximation (and the organizers accepted such reports)."""

from pathlib import Path

import pytest
from support import audit_findings, by_rule, good_folder_files, write_folder

FIXTURES = Path(__file__).parents[2] / "fixtures" / "legality"
CASES = [("BPB_BYTE_ACCOUNTING", FIXTURES / "bpb_byte_accounting" / "bpb_fixed_ratio.py"),
         ("VAL_SUBSET", FIXTURES / "val_subset" / "val_random_windows.py")]


def _severities(folder, script, rule):
    files = {name: text for name, text in good_folder_files().items() if not name.endswith(".log")}
    files["train_gpt.py"] = script.read_text()
    found = by_rule(audit_findings(write_folder(folder, files), only=frozenset({rule})), rule)
    return {str(f.severity) for f in found if str(f.severity) != "INFO"}


@pytest.mark.parametrize("rule, script", CASES, ids=[rule for rule, _ in CASES])
def test_a_record_fails_and_an_exploration_is_warned(tmp_path, rule, script):
    assert _severities(tmp_path / "records/track_10min_16mb/2026-05-01_Run", script, rule) == {"FAIL"}
    assert _severities(tmp_path / "records/track_non_record_16mb/2026-05-01_Run", script, rule) == {"WARN"}
