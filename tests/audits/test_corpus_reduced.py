"""Real submissions cut down by hand to the lines their verdict rests on.

Each folder of tests/fixtures/corpus_reduced/ is a submission reduced to the code and log lines
that decide it (the functions on the scored path, the log lines the budgets read), with the
structure kept so that the same rules fire. `cases.tsv` holds one line per folder: its name, the
verdict, the rules that must block, optionally the rules that must warn without blocking (what
a PASS case is about) and the places findings must name (`RULE@file:line`: the line a reviewer
needs to see, the one that does what the rule forbids). A case is added with a folder and a line. A case whose
verdict rests on the PR's other paths (the one-folder rule) has `<name>.changes` beside its folder:
the PR's changed paths as `git diff --name-status` gives them, passed as `--changed-files` is.
"""

from pathlib import Path

import pytest

from audits import api
from audits.context import AuditOptions
from audits.engine import level_of
from audits.findings import Severity
from audits.registry import PASS
from audits.submission.gitdiff import parse_changes

REDUCED = Path(__file__).parents[1] / "fixtures" / "corpus_reduced"


def _cases() -> dict[str, tuple[str, set[str], set[str], set[tuple[str, str, int]]]]:
    cases = {}
    for line in (REDUCED / "cases.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, verdict, *columns = line.split("\t")
        blocking, warned, placed = (columns + ["", "", ""])[:3]
        places = set()
        for entry in filter(None, placed.split(";")):
            rule, _, where = entry.partition("@")
            rel, _, number = where.rpartition(":")
            places.add((rule, rel, int(number)))
        cases[name] = (verdict, set(filter(None, blocking.split(";"))), set(filter(None, warned.split(";"))), places)
    return cases


CASES = _cases()


def test_every_folder_has_its_line_and_every_line_its_folder():
    folders = {p.name for p in REDUCED.iterdir() if p.is_dir()}
    assert folders == set(CASES)
    assert {p.stem for p in REDUCED.glob("*.changes")} <= folders


@pytest.mark.parametrize("name", sorted(CASES))
def test_reduced_case_gets_its_verdict_and_blocks_on_its_rules(name):
    verdict, rules, warned, places = CASES[name]
    changes = REDUCED / f"{name}.changes"
    changed = tuple(parse_changes(changes.read_text(encoding="utf-8"), str(changes))) if changes.is_file() else None
    options = AuditOptions(smoke=False, changed_files=changed)
    report = api.audit([str(REDUCED / name)], options).submissions[0]
    assert report.errors == []
    blocking = {f.rule for f in report.findings if level_of(f) != PASS}
    assert report.verdict() == verdict, [f.message for f in report.findings if f.rule in blocking]
    assert rules <= blocking
    assert warned <= {f.rule for f in report.findings if level_of(f) == PASS and f.severity == Severity.WARN}
    if verdict == PASS:
        assert blocking == set()
    named = {(f.rule, f.file, f.line) for f in report.findings if level_of(f) != PASS or f.severity == Severity.WARN}
    assert places <= named, sorted(named, key=str)
