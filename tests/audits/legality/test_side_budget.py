"""Scripts the run does not import (ablation copies, helpers run by hand) are read up to a budget
of characters; past it they are named as not checked, while the run's own scripts, and what they
import or name, are always read."""

from __future__ import annotations

from support import audit_findings, by_rule, write_folder

from audits import legality
from tests.legality_fixtures import ROOT

SLOT = (ROOT / "slot" / "slot_delta_adamw.py").read_text()
ENTRY = "import glob\nimport os\n\nimport helper\n\nif __name__ == '__main__':\n    helper.main()\n"


def test_side_scripts_past_the_budget_are_named_not_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(legality, "SIDE_BUDGET", len(SLOT) + 10)
    files = {"train_gpt.py": ENTRY, "helper.py": SLOT}
    files.update({f"ablations/slot_{i}.py": SLOT for i in range(3)})
    findings = audit_findings(write_folder(tmp_path, files))
    slot = by_rule(findings, "SLOT")
    # the imported helper is the run: its SLOT blocks; one ablation fits the budget (a warning)
    assert {(f.file, str(f.severity)) for f in slot if not f.unchecked} == {
        ("helper.py", "FAIL"), ("ablations/slot_0.py", "WARN")}
    [note] = [f for f in slot if f.unchecked]
    assert note.message.startswith("2 scripts the run does not import were not checked "
                                   "(ablations/slot_1.py, ablations/slot_2.py)")
    syntax = by_rule(findings, "PY_SYNTAX_TOO_NEW")
    assert [f.message[:40] for f in syntax if f.unchecked] == ["2 scripts the run does not import were n"]


def test_within_budget_follows_imports_and_names_before_any_parse(monkeypatch):
    sources = [("a/b.py", "x = 1\n"), ("loader.py", "y = 2\n"), ("other.py", "z" * 50),
               ("train_gpt.py", "import a.b\nrun('loader')\n")]
    kept, skipped = legality.within_budget(sources)
    assert [rel for rel, _ in kept] == ["a/b.py", "loader.py", "other.py", "train_gpt.py"]
    assert skipped == []
    monkeypatch.setattr(legality, "SIDE_BUDGET", 10)
    kept, skipped = legality.within_budget(sources)
    assert skipped == ["other.py"]
