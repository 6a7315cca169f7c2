"""The legality fixtures: small training scripts in tests/fixtures/legality, each declaring what it
demonstrates (`# fixture: RULE violation|legal|contested|dead`) and marking the lines findings
must point at (`# expect: RULE SEVERITY`). A folder fixture is a submission of several scripts,
in subfolders too (a package).
They are grouped by rule: a fixture lives in the folder of the first rule it declares (its id in
lower case, the name of the rule's module).

Shared by the tests and by benchmarks/legality_scores.py (precision and recall on the fixtures).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

from audits import catalogue
from audits.submission import codesize
from audits.context import AuditOptions
from audits.engine import audit_submission
from audits.findings import Severity
from audits.submission import ENTRY_SCRIPT, load

ROOT = Path(__file__).parent / "fixtures" / "legality"
# Written after the analysis was frozen and never used to tune it: scored, not tested.
HELD_OUT = Path(__file__).parent / "fixtures" / "legality_heldout"
RULES = tuple(r.id for r in catalogue.RULES if r.family == "legality")
_FIXTURE = re.compile(r"^# fixture: (\w+) (violation|legal|contested|dead)\s*$", re.M)
_EXPECT = re.compile(r"#\s*expect:\s*(\w+)\s+(FAIL|WARN|INFO)\b")


@dataclasses.dataclass(frozen=True)
class Fixture:
    name: str
    path: Path  # a script (run as train_gpt.py) or a folder of scripts
    roles: tuple[tuple[str, str], ...]  # (rule, role)
    expected: frozenset[tuple[str, str, str, int]]  # (file, rule, severity, line)

    def scripts(self) -> dict[str, str]:
        if self.path.is_dir():
            return _read(self.path)
        return {ENTRY_SCRIPT: self.path.read_text()}


def fixtures(root: Path = ROOT) -> list[Fixture]:
    found = []
    for path in sorted(p for folder in root.iterdir() if folder.is_dir() for p in folder.iterdir()):
        if path.suffix != ".py" and not path.is_dir():
            continue
        roles, expected = [], set()
        for rel, text in _read(path).items():
            roles += _FIXTURE.findall(text)
            for number, line in enumerate(text.splitlines(), start=1):
                for rule, severity in _EXPECT.findall(line):
                    expected.add((rel, rule, severity, number))
        found.append(Fixture(path.stem, path, tuple(roles), frozenset(expected)))
    return found


def _read(path: Path) -> dict[str, str]:
    if path.is_dir():
        return {p.relative_to(path).as_posix(): p.read_text() for p in sorted(path.rglob("*.py"))}
    return {ENTRY_SCRIPT: path.read_text()}


def audit(fixture: Fixture, folder: Path, wrap: bool = False):
    """Legality findings for the fixture laid out as a submission in `folder` (optionally with
    every script shipped as a self-extracting wrapper)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for rel, text in fixture.scripts().items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(codesize.wrap(text) if wrap else text)
    report = audit_submission(load(folder), AuditOptions(only=frozenset(RULES)))
    assert not report.errors, report.errors
    return report.findings


def observed(findings) -> set[tuple[str, str, str, int]]:
    return {(f.file, f.rule, str(f.severity), f.line) for f in findings}


def problems(findings) -> set[tuple[str, str, str, int]]:
    return {(f.file, f.rule, str(f.severity), f.line) for f in findings if f.severity > Severity.INFO}
