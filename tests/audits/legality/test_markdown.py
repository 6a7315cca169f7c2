"""The Markdown review of a legality finding, pinned as a snapshot: verdict line, the finding with
its place, code and fix, the legal notes, and the rules checked with nothing to report."""

from __future__ import annotations

from pathlib import Path

from audits.context import AuditOptions
from audits.engine import AuditReport, audit_submission
from audits.report import render_markdown
from audits.submission import load
from tests.legality_fixtures import ROOT

SNAPSHOT = Path(__file__).parent / "snapshots" / "legality_review.md"
# The rules the review is asked for: named here, so that a new rule leaves the snapshot as it is.
RULES = ("TTT_SCORE_AFTER_ADAPT", "TWO_PASS_RESCORE", "BOS_CROSS_DOC_LEAK", "SLOT", "ETLB", "NGRAM_TARGET_IN_KEY")


def review(tmp_path) -> str:
    folder = tmp_path / "2026-05-01_review"
    folder.mkdir()
    for name in ("ttt_score_after_adapt/ttt_epochs_outside.py", "bos_cross_doc_leak/smear_bos_masked.py"):
        source = (ROOT / name).read_text()
        (folder / ("train_gpt.py" if name.startswith("ttt_") else "model_parts.py")).write_text(source)
    options = AuditOptions(only=frozenset(RULES))
    return render_markdown(AuditReport(options, [audit_submission(load(folder), options)]))


def test_review_matches_snapshot(tmp_path):
    assert review(tmp_path) == SNAPSHOT.read_text()
