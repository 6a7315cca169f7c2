"""The rule catalogue matches the spec, every check is documented like the others, and every
legality rule is whole: its module, its line in docs/legality.md's table (its severity and #1017
conditions), its fixtures. (Its words: tests/audits/legality/test_rule_homes.py.)"""

import inspect
import re
from pathlib import Path

from audits import catalogue, compliance, registry
from audits.context import AuditOptions
from audits.findings import Severity
from audits.legality.judge import RECOGNIZERS
from audits.report import rules as rules_text
from tests.legality_fixtures import ROOT as FIXTURES
from tests.legality_fixtures import fixtures

DOCS = Path(__file__).resolve().parents[2] / "docs" / "legality.md"
# The IDs and severities of the project's rule spec (docs: the rule catalogue the audit enforces);
# the legality rules' are in docs/legality.md's table.
SPEC = {
    "LAYOUT_NOT_SINGLE_FOLDER": "FAIL", "FOLDER_NAME": "WARN", "MISSING_FILES": "FAIL",
    "SUBMISSION_JSON_INVALID": "FAIL", "SUBMISSION_JSON_MISMATCH": "FAIL", "FEWER_THAN_3_SEEDS": "WARN",
    "NOT_SIGNIFICANT": "WARN", "MISSING_REQUIREMENT": "WARN",
    "ARTIFACT_OVER_CAP": "FAIL", "ARTIFACT_LITERAL_OVER_CAP": "WARN", "TRAIN_OVER_BUDGET": "FAIL",
    "GPTQ_CALIB_AFTER_BUDGET": "FAIL", "EVAL_OVER_BUDGET": "FAIL",
    "PY_SYNTAX_TOO_NEW": "FAIL", "PY_STDLIB_TOO_NEW": "WARN", "IMPORT_FAIL": "FAIL", "IMPORT_STUB_LIMIT": "WARN",
}
LEGALITY = [rule for rule in catalogue.RULES if rule.family == "legality"]
HEADINGS = ("What it checks:", "Why it matters:", "Illegal", "Legal:", "Known limits:")


def _table() -> list[tuple[str, str, tuple[str, ...]]]:
    """docs/legality.md's table of the rules: (id, severity, #1017 conditions) per line."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("\n## The rules\n")
    section = text[start:text.index("\n## ", start + 1)]
    rows = re.findall(r"(?m)^\| `(\w+)` \| (FAIL|WARN) \|([C0-9, ]*)\|", section)
    return [(rule, severity, tuple(conds.replace(",", " ").split())) for rule, severity, conds in rows]


def test_every_spec_rule_is_in_the_catalogue_with_its_severity():
    for rule_id, severity in SPEC.items():
        assert str(catalogue.get(rule_id).severity) == severity, rule_id


def test_the_docs_table_lists_the_legality_rules_in_the_catalogue_order_with_severity_and_conditions():
    assert [(r.id, str(r.severity), tuple(c.split()[-1] for c in r.conditions)) for r in LEGALITY] == _table()


def test_legality_rules_have_distinct_places():
    places = [rule.place for rule in LEGALITY]
    assert all(places) and len(set(places)) == len(places), places


def test_only_legality_rules_name_1017_conditions_and_every_source_is_a_link():
    for rule in catalogue.RULES:
        assert rule.sources and all(s.url.startswith("https://") for s in rule.sources), rule.id
        assert rule.family == "legality" or not rule.conditions, rule.id


def test_rules_beyond_the_spec_say_why_they_exist():
    for rule in catalogue.RULES:
        if rule.id not in SPEC and rule.family != "legality":
            assert rule.sources[0].label.startswith("pgolf: "), rule.id


def test_a_legality_rule_is_the_module_named_after_it():
    for rule in LEGALITY:
        assert registry.CHECKS[rule.id].__module__ == f"audits.rules.legality.{rule.id.lower()}", rule.id


def test_every_rule_the_analysis_reads_has_violating_and_legal_fixtures_in_its_folder():
    roles: dict[str, set] = {}
    for fixture in fixtures():
        roles.setdefault(fixture.path.parent.name, set()).update(fixture.roles)
    for rule in RECOGNIZERS:
        have = roles.get(rule.lower(), set())
        for role in ("violation", "legal"):
            assert (rule, role) in have, f"{rule}: no {role} fixture in {FIXTURES.name}/{rule.lower()}/"


def test_ids_are_unique_and_upper_snake():
    ids = [r.id for r in catalogue.RULES]
    assert len(ids) == len(set(ids))
    assert all(i.replace("_", "").isalnum() and i.upper() == i for i in ids)


def test_every_check_is_documented_with_the_headings():
    for rule_id, fn in registry.CHECKS.items():
        doc = inspect.cleandoc(fn.__doc__ or "")
        missing = [h for h in HEADINGS if h not in doc]
        assert not missing, f"{rule_id} doc lacks {missing}"


def test_found_uses_catalogue_defaults():
    f = registry.found("FOLDER_NAME", "x")
    assert f.severity == Severity.WARN and f.source.startswith("PR #1667")


def test_every_rule_has_one_check_and_every_check_a_rule():
    assert set(registry.CHECKS) == {rule.id for rule in catalogue.RULES}


def test_a_rule_row_and_its_check_live_in_one_module():
    for rule in catalogue.RULES:
        module = inspect.getmodule(registry.CHECKS[rule.id])
        assert rule in module.RULES, f"{rule.id}: its check is in {module.__name__}, its row is not"


def test_list_rules_agrees_with_the_compliance_summary():
    options = AuditOptions(smoke=True, probe=True)
    lines = {line.split()[0]: line for line in rules_text.rules_table().splitlines() if line.startswith("  ")}
    for rule in catalogue.RULES:
        listed_unchecked = "not checked by this version" in lines[rule.id]
        assert listed_unchecked == (not compliance.checked(rule, options)), rule.id
