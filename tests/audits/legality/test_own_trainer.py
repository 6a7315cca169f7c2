"""pgolf's own trainer, bundled into the train_gpt.py it ships, must pass the legality analysis:
a real training script of record size, with a dataclass that holds both splits."""

from __future__ import annotations

import pytest

from audits import catalogue  # noqa: F401  (loads the rules, whose recognizers the analysis runs)
from audits.findings import Severity
from audits.legality import analyse_sources


@pytest.mark.slow
@pytest.mark.parametrize("preset, ttt_mode, tilt", [
    (None, None, None), ("record", "sgd", "0"), ("frontier", "sgd", "0"), ("frontier", "lora", "0"),
    ("record", "sgd", "1"), ("frontier", "lora", "1")])
def test_the_bundled_trainer_has_no_legality_problem(preset, ttt_mode, tilt):
    """The full bundle, and each preset's record bundle (what a GPU run ships): the frontier's
    holds the gates and LQER too, with TTT_MODE=lora the per-document LoRA TTT instead of the
    whole-model one, and with NGRAM_TILT_ENABLED=1 the n-gram tilt in every scored phase."""
    bundle = pytest.importorskip("trainer.bundle")
    from trainer.config import load_config, record_settings
    settings = None if preset is None else record_settings(load_config(
        {"PRESET": preset, "TTT_MODE": ttt_mode, "NGRAM_TILT_ENABLED": tilt}))
    source = bundle.build_bundle(settings=settings)
    assert ("def fold_corrections(" in source) == (preset != "record")
    assert ("def adapt_batch(" in source) == (ttt_mode != "sgd")
    assert ("class NgramTilt" in source) == (tilt != "0")
    result = analyse_sources((("train_gpt.py", source),))
    assert result.unparsed == {}
    problems = [(v.rule, v.severity.name, v.kind) for v in result.verdicts if v.severity > Severity.INFO]
    assert problems == []
    # It was read, not skipped: its bytes-per-token table was recognised as correct, and its
    # test-time training as the legal score-first shape.
    assert "BPB_BYTE_ACCOUNTING" in {v.rule for v in result.verdicts}
    ttt = [v for v in result.verdicts if v.rule == "TTT_SCORE_AFTER_ADAPT"]
    assert ttt and all(v.kind == "score_first" for v in ttt)
    # The tilt, where the file holds it, as a tilt renormalized over the vocabulary.
    tilts = {(v.rule, v.kind) for v in result.verdicts if v.rule.startswith("NGRAM")}
    assert tilts == (set() if tilt == "0" else {("NGRAM_NOT_NORMALIZED", "renormalized")})
