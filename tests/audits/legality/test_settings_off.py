"""Code that needs a setting as it is by default did not run where the folder's runs changed it
(a launch line or the logs' hyperparameters): its verdict is a note saying where."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import audit_findings, by_rule, good_folder_files, write_folder

ADAPT_THEN_SCORE = (Path(__file__).parents[2] / "fixtures" / "legality" / "ttt_score_after_adapt"
                    / "ttt_adapt_then_score.py").read_text()
CALL = "    val_loss = eval_with_ttt(model, val_tokens, cfg)\n"
GATED = ('    val_loss = 0.0\n'
         '    adapt = int(os.environ.get("ADAPT_AT_EVAL", "1"))\n'
         '    if adapt:\n'
         '        val_loss = eval_with_ttt(model, val_tokens, cfg)\n')


@pytest.mark.parametrize("launch, fails", [
    (None, True),  # on by default, and nothing shows the runs turned it off
    ("ADAPT_AT_EVAL=0 torchrun --standalone --nproc_per_node=8 train_gpt.py\n", False),
    ("ADAPT_AT_EVAL=1 torchrun --standalone --nproc_per_node=8 train_gpt.py\n", True),
])
def test_code_behind_a_default_the_runs_turned_off(tmp_path, launch, fails):
    assert CALL in ADAPT_THEN_SCORE
    files = {**good_folder_files(), "train_gpt.py": ADAPT_THEN_SCORE.replace(CALL, GATED)}
    if launch is not None:
        files["run.sh"] = launch
    found = by_rule(audit_findings(write_folder(tmp_path / "2026-04-09_Run", files)), "TTT_SCORE_AFTER_ADAPT")
    assert found
    assert any(str(f.severity) == "FAIL" for f in found) == fails, [f.message for f in found]
    if not fails:
        assert all("run.sh:1" in f.message for f in found if f.line is not None)
