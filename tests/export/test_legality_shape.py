"""pgolf's own bundle, read by pgolf's legality analysis: the TTT is the recognised legal shape."""

from audits.findings import Severity
from audits.legality import analyse_sources
from pgolf_cli.bundle import build_bundle


def test_the_bundled_evaluation_is_read_as_legal_score_first_ttt():
    verdicts = analyse_sources((("train_gpt.py", build_bundle()),)).verdicts
    assert not [v for v in verdicts if v.severity > Severity.INFO], verdicts
    ttt = [v for v in verdicts if v.rule == "TTT_SCORE_AFTER_ADAPT"]
    assert ttt and all(v.message.startswith("legal score-first adaptation") for v in ttt)
