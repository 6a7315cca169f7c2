"""pgolf's own trainer, bundled into the train_gpt.py it ships, must pass the legality analysis:
a real training script of record size, with a dataclass that holds both splits."""

from __future__ import annotations

import pytest

from audits.findings import Severity
from audits.legality import analyse_sources


@pytest.mark.slow
@pytest.mark.parametrize("record", [False, True])
def test_the_bundled_trainer_has_no_legality_problem(record):
    """The full bundle, and the record bundle for the record settings (what a GPU run ships)."""
    bundle = pytest.importorskip("trainer.bundle")
    from trainer.config import load_config, record_settings
    settings = record_settings(load_config({})) if record else None
    result = analyse_sources((("train_gpt.py", bundle.build_bundle(settings=settings)),))
    assert result.unparsed == {}
    problems = [(v.rule, v.severity.name, v.kind) for v in result.verdicts if v.severity > Severity.INFO]
    assert problems == []
    # It was read, not skipped: its bytes-per-token table was recognised as correct, and its
    # test-time training as the legal score-first shape.
    assert "BPB_BYTE_ACCOUNTING" in {v.rule for v in result.verdicts}
    ttt = [v for v in result.verdicts if v.rule == "TTT_SCORE_AFTER_ADAPT"]
    assert ttt and all(v.kind == "score_first" for v in ttt)
