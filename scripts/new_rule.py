"""Start a new rule: its row, documentation stub and check in its family's home, and the fixtures
or tests that will prove it.

    python scripts/new_rule.py ANSWER_PEEK --family legality --severity FAIL --level ILLEGAL \
        --summary "No score reads the answer before predicting it." --condition C1
    python scripts/new_rule.py LOG_TRUNCATED --family metadata --severity WARN --level NEEDS_ACTION \
        --summary "Every seed's log reaches its final score line."

A legality rule gets its own module in audits/rules/legality/ (the package imports every module
in it; the row's `place` puts the rule last in the catalogue) with its row, a reading and its
words, a recognizer that reads no event yet (it decides which of the analysis' events make the
rule's verdicts) and its check; one violating and one legal fixture in
tests/fixtures/legality/RULE_ID_LOWER/ with `# fixture:` and `# expect:` markers
(tests/audits/legality/test_fixtures.py picks them up; it asks for a second violation); and its
line in docs/legality.md's table of the rules, which tests/audits/test_catalogue.py reads. Another
family gets the row and check appended to audits/rules/FAMILY.py and a test file with a failing
test and a quiet test to fill in. Every generated piece fails the test suite until it is written
for real: the recognizer reads nothing, the fixtures mark nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from audits import catalogue

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "audits" / "rules"
DOCS = ROOT / "docs" / "legality.md"
FAMILIES = ("layout", "metadata", "significance", "requirements", "budgets", "python", "smoke",
            "legality", "probe", "input")

DOC = '''    """What it checks: TODO.

    Why it matters: TODO (the rules.md line, the issue or PR that ruled on it).

    Illegal: TODO.

    Legal: TODO.

    Known limits: TODO.
    """'''


def row(rule_id: str, severity: str, level: str, family: str, summary: str,
        conditions: list[str], place: int = 0) -> str:
    conds = f", ({', '.join(conditions)},)" if conditions else ""
    placed = f", place={place}" if place else ""
    return (f'    Rule("{rule_id}", {severity}, "{family}",\n'
            f'         {summary!r},\n'
            f'         (pgolf("TODO: the source this rule rests on"),){conds}, level={level}{placed}),\n')


def legality_module(rule_id: str, severity: str, level: str, summary: str,
                    conditions: list[str], place: int) -> str:
    names = sorted({"Rule", "Words", "check", "pgolf", "rules", "words", severity, level, *conditions},
                   key=lambda s: (s[0].islower(), s))
    return (f'"""{rule_id}: the rule, its words and its check."""\n\n'
            "from __future__ import annotations\n\n"
            "from audits.legality.judge import recognizer\n"
            f"from audits.registry import {', '.join(names)}\n"
            "from audits.rules.legality.evidence import findings\n\n"
            f"RULES = rules(\n{row(rule_id, severity, level, 'legality', summary, conditions, place)})\n"
            "# Its readings (the keys of its words).\n"
            'FOUND = "found"\n'
            "WORDS = words(\n"
            f'    "{rule_id}",\n'
            '    found=Words("TODO: what happens at {at}", "TODO: what to do instead"),\n'
            ")\n\n\n"
            "def _read(e, facts):\n"
            '    """TODO: which events (audits/legality/values.py\'s Event, order.py\'s judgments) make\n'
            f"    its verdicts, such as `[Verdict(\"{rule_id}\", FOUND, {severity}, e.site)]`.\"\"\"\n"
            "    return []\n\n\n"
            f'recognizer("{rule_id}", _read)\n\n\n'
            f'@check("{rule_id}")\n'
            f"def {rule_id.lower()}(sub, options):\n{DOC}\n"
            f'    yield from findings(sub, "{rule_id}")\n')


def legality_fixture(rule_id: str, role: str) -> str:
    expect = f"  # expect: {rule_id} FAIL" if role == "violation" else ""
    return (f"# fixture: {rule_id} {role}\n"
            f'"""{role.capitalize()}: {rule_id}. TODO: what this script does and why it is '
            f'{"illegal" if role == "violation" else "legal"}."""\n\n'
            f"TODO = None{expect}  (replace with the lines that show it; mark each with its rule)\n")


def family_check(rule_id: str) -> str:
    return (f'\n\n@check("{rule_id}")\n'
            f"def {rule_id.lower()}(sub, options):\n{DOC}\n"
            "    return ()\n")


def family_test(rule_id: str, family: str) -> str:
    return (f'"""{rule_id}: fires on a folder that breaks it, quiet on the legal shape."""\n\n'
            "import pytest\n\n\n"
            f"def test_{rule_id.lower()}_fires():\n"
            f'    pytest.fail("write a folder that breaks {rule_id} and assert its finding")\n\n\n'
            f"def test_{rule_id.lower()}_is_quiet_on_the_legal_shape():\n"
            f'    pytest.fail("write the legal folder and assert no {rule_id} finding")\n')


def write_new(path: Path, text: str) -> None:
    if path.exists():
        raise SystemExit(f"error: {path.relative_to(ROOT)} exists; choose another rule id")
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT)}")


def docs_table(text: str, rule_id: str, severity: str, conditions: list[str]) -> str:
    """docs/legality.md with the rule's line at the end of its table under `## The rules`."""
    lines = text.split("\n")
    try:
        at = lines.index("## The rules")
        while not lines[at].startswith("|"):
            at += 1
        while lines[at].startswith("|"):
            at += 1
    except (ValueError, IndexError):
        raise SystemExit("error: no table under `## The rules` in docs/legality.md") from None
    lines.insert(at, f"| `{rule_id}` | {severity} | {', '.join(conditions)} | TODO: what makes its finding |")
    return "\n".join(lines)


def add_to_family(rule_id: str, args) -> None:
    module = RULES / f"{args.family}.py"
    text = module.read_text()
    head, sep, tail = text.partition("\n)\n")  # the end of the family's RULES = rules(...) block
    if not sep:
        raise SystemExit(f"error: no `RULES = rules(...)` block in {module.relative_to(ROOT)}")
    module.write_text(head + "\n" + row(rule_id, args.severity, args.level, args.family,
                                        args.summary, args.condition).rstrip("\n") + sep + tail.rstrip("\n")
                      + family_check(rule_id))
    print(f"added the row and a check stub to {module.relative_to(ROOT)} (import what it names)")
    write_new(ROOT / "tests" / "audits" / "rules" / f"test_{rule_id.lower()}.py", family_test(rule_id, args.family))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rule_id", help="UPPER_SNAKE_CASE, never used before")
    parser.add_argument("--family", required=True, choices=FAMILIES)
    parser.add_argument("--severity", required=True, choices=("FAIL", "WARN"))
    parser.add_argument("--level", required=True, choices=("ILLEGAL", "NEEDS_ACTION"),
                        help="the verdict a blocking finding pushes toward: ILLEGAL when the claimed "
                        "score is invalid, NEEDS_ACTION when the author must fix something first")
    parser.add_argument("--summary", required=True, help="one sentence: what a legal submission does")
    parser.add_argument("--condition", action="append", default=[], choices=("C1", "C2", "C3", "C4"),
                        help="a #1017 condition the rule tests (repeatable)")
    args = parser.parse_args()
    rule_id = args.rule_id
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", rule_id):
        raise SystemExit(f"error: {rule_id!r} is not UPPER_SNAKE_CASE")
    if rule_id in catalogue.BY_ID:
        raise SystemExit(f"error: {rule_id} is registered already; IDs are never reused")
    if args.condition and args.family != "legality":
        raise SystemExit("error: --condition is for legality rules (the #1017 conditions are theirs)")
    name = rule_id.lower()
    if args.family == "legality":
        docs = docs_table(DOCS.read_text(), rule_id, args.severity, args.condition)
        place = 1 + max(rule.place for rule in catalogue.RULES if rule.family == "legality")
        write_new(RULES / "legality" / f"{name}.py",
                  legality_module(rule_id, args.severity, args.level, args.summary, args.condition, place))
        fixtures = ROOT / "tests" / "fixtures" / "legality" / name
        write_new(fixtures / f"{name}_violation.py", legality_fixture(rule_id, "violation"))
        write_new(fixtures / f"{name}_legal.py", legality_fixture(rule_id, "legal"))
        DOCS.write_text(docs)
        print(f"added its line to the table of the rules in {DOCS.relative_to(ROOT)}")
    else:
        add_to_family(rule_id, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
