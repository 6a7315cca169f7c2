"""Every legality fixture gives exactly the findings its markers ask for: each marked line is
reported with its rule and severity, and nothing else is a WARN or FAIL."""

from __future__ import annotations

import collections

import pytest

from tests.legality_fixtures import HELD_OUT, ROOT, RULES, audit, fixtures, observed, problems

FIXTURES = fixtures()


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_fixture_findings(fixture, tmp_path):
    findings = audit(fixture, tmp_path / "2026-05-01_fixture")
    assert fixture.expected <= observed(findings), "expected finding missing"
    unexpected = problems(findings) - fixture.expected
    assert not unexpected, f"unexpected WARN/FAIL: {sorted(unexpected)}"


@pytest.mark.parametrize("fixture", [f for f in FIXTURES if any(role == "violation" for _, role in f.roles)][:6],
                         ids=lambda f: f.name)
def test_wrapped_fixture_findings(fixture, tmp_path):
    """Shipped as a self-extracting wrapper, the same lines of the unwrapped source are reported,
    and each finding says it came from the wrapper."""
    pytest.importorskip("audits.submission.unwrap")
    findings = audit(fixture, tmp_path / "2026-05-01_wrapped", wrap=True)
    assert fixture.expected <= observed(findings)
    assert all(f.via for f in findings if f.severity > 0 and f.line is not None)


def test_every_rule_has_two_violations_and_a_legal_twin():
    roles = collections.defaultdict(collections.Counter)
    for fixture in FIXTURES:
        for rule, role in fixture.roles:
            roles[rule][role] += 1
    for rule in RULES:
        assert roles[rule]["violation"] >= 2, f"{rule}: fewer than two violating fixtures"
        assert roles[rule]["legal"] >= 1, f"{rule}: no legal twin"


def test_each_fixture_lives_in_the_folder_of_the_first_rule_it_declares():
    for root in (ROOT, HELD_OUT):
        assert {p.name for p in root.iterdir() if not p.is_dir()} <= {"README.md"}, root
        for fixture in fixtures(root):
            assert fixture.roles, f"{fixture.path}: no `# fixture:` line"
            assert fixture.path.parent.name == fixture.roles[0][0].lower(), fixture.path


def test_violations_are_marked_and_legal_twins_are_quiet():
    """A violation fixture marks at least one WARN/FAIL of its rule; a legal twin marks none."""
    for fixture in FIXTURES:
        for rule, role in fixture.roles:
            marked = {sev for _, r, sev, _ in fixture.expected if r == rule}
            if role == "violation":
                assert "FAIL" in marked or "WARN" in marked, fixture.name
            if role in ("legal", "dead"):
                assert not marked & {"FAIL", "WARN"}, fixture.name


def test_unwrapped_payload_is_what_gets_checked(tmp_path):
    """Until the unwrapper fills Script.unwrapped, a wrapper is reported as not checked; once it
    is filled (here by hand, standing in for the unwrapper), findings point into the payload and
    name the wrapper."""
    from audits.submission import codesize
    from audits.context import AuditOptions
    from audits.engine import audit_submission
    from audits.submission import load

    fixture = next(f for f in FIXTURES if f.name == "ttt_adapt_then_score")
    folder = tmp_path / "2026-05-01_wrapped"
    folder.mkdir()
    source = fixture.path.read_text()
    (folder / "train_gpt.py").write_text(codesize.wrap(source))
    sub = load(folder)
    options = AuditOptions(only=frozenset(RULES))
    if sub.scripts["train_gpt.py"].unwrapped is None:
        report = audit_submission(sub, options)
        assert {f.severity for f in report.findings} == {0}
        assert any("not unwrapped" in f.message for f in report.findings)
        sub.scripts["train_gpt.py"].unwrapped = source
        sub.scripts["train_gpt.py"].wrapper_note = "train_gpt.py:2, lzma + base85"
    report = audit_submission(sub, options)
    assert fixture.expected <= observed(report.findings)
    failing = [f for f in report.findings if f.severity > 0]
    assert failing and all(f.via and f.via.startswith(f"line {f.line} of the source unwrapped")
                           for f in failing)
