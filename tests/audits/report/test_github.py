"""`--format github`: the verdict first, then annotations a reviewer can click to the right place."""

from audits import api
from audits.context import AuditOptions
from audits.report import render_github
from audits.submission import codesize
from legality_fixtures import ROOT

SLOT = (ROOT / "slot" / "slot_delta_adamw.py").read_text()


def _annotations(folder, **options):
    return render_github(api.audit([str(folder)], AuditOptions(only=frozenset({"SLOT"}), **options)))


def test_a_finding_in_a_plain_script_names_its_line(tmp_path):
    (tmp_path / "train_gpt.py").write_text(SLOT)
    lines = _annotations(tmp_path).splitlines()
    assert lines[0] == f"::notice title=pgolf verdict::{tmp_path.name}: ILLEGAL"
    slot = next(x for x in lines if "title=pgolf SLOT" in x)
    assert slot.startswith(f"::error file={tmp_path}/train_gpt.py,line=")


def test_a_finding_in_a_wrapper_payload_points_at_the_file_not_at_a_payload_line(tmp_path):
    # The wrapper has 2 lines; the payload's line number would land on nothing in the diff.
    (tmp_path / "train_gpt.py").write_text(codesize.wrap(SLOT))
    slot = next(x for x in _annotations(tmp_path).splitlines() if "title=pgolf SLOT" in x)
    assert slot.startswith(f"::error file={tmp_path}/train_gpt.py,title=")
    assert ",line=" not in slot and "of the source unwrapped from train_gpt.py" in slot
