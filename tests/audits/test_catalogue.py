"""The rule catalogue matches the spec, and every check is documented like the others."""

import inspect

from audits import catalogue, compliance, registry
from audits.context import AuditOptions
from audits.findings import Severity
from audits.report import rules as rules_text

# The IDs and severities of the project's rule spec (docs: the rule catalogue the audit enforces).
SPEC = {
    "LAYOUT_NOT_SINGLE_FOLDER": "FAIL", "FOLDER_NAME": "WARN", "MISSING_FILES": "FAIL",
    "SUBMISSION_JSON_INVALID": "FAIL", "SUBMISSION_JSON_MISMATCH": "FAIL", "FEWER_THAN_3_SEEDS": "WARN",
    "NOT_SIGNIFICANT": "WARN", "MISSING_REQUIREMENT": "WARN",
    "ARTIFACT_OVER_CAP": "FAIL", "ARTIFACT_LITERAL_OVER_CAP": "WARN", "TRAIN_OVER_BUDGET": "FAIL",
    "GPTQ_CALIB_AFTER_BUDGET": "FAIL", "EVAL_OVER_BUDGET": "FAIL",
    "PY_SYNTAX_TOO_NEW": "FAIL", "PY_STDLIB_TOO_NEW": "WARN", "IMPORT_FAIL": "FAIL", "IMPORT_STUB_LIMIT": "WARN",
    "TTT_SCORE_AFTER_ADAPT": "FAIL", "PREQUANT_TTT_ON_VAL": "FAIL", "VAL_DATA_IN_TRAINING": "FAIL",
    "PAID_PREFIX": "FAIL", "GPTQ_CALIB_ON_VAL": "FAIL", "SLOT": "FAIL", "ETLB": "FAIL",
    "NGRAM_TARGET_IN_KEY": "FAIL", "NGRAM_NOT_NORMALIZED": "FAIL", "TWO_PASS_RESCORE": "FAIL",
    "BYTE_MIXTURE_NOT_NORMALIZED": "FAIL", "REALIZED_TOKEN_GATE": "FAIL", "BOS_CROSS_DOC_LEAK": "FAIL",
    "BPB_BYTE_ACCOUNTING": "WARN", "VAL_SUBSET": "FAIL", "TRAIN_DATA_AT_EVAL": "FAIL", "NETWORK_AT_EVAL": "FAIL",
}
CONDITIONS = {"TTT_SCORE_AFTER_ADAPT": ("C3",), "PREQUANT_TTT_ON_VAL": ("C3",), "PAID_PREFIX": ("C1",),
              "GPTQ_CALIB_ON_VAL": ("C1",), "SLOT": ("C1", "C3"), "ETLB": ("C1", "C3"),
              "NGRAM_TARGET_IN_KEY": ("C2",), "NGRAM_NOT_NORMALIZED": ("C2",), "TWO_PASS_RESCORE": ("C4",),
              "BYTE_MIXTURE_NOT_NORMALIZED": ("C2",), "REALIZED_TOKEN_GATE": ("C1",), "BOS_CROSS_DOC_LEAK": ("C1",)}
HEADINGS = ("What it checks:", "Why it matters:", "Illegal", "Legal:", "Known limits:")


def test_every_spec_rule_is_in_the_catalogue_with_its_severity():
    for rule_id, severity in SPEC.items():
        assert str(catalogue.get(rule_id).severity) == severity, rule_id


def test_conditions_and_sources():
    for rule in catalogue.RULES:
        assert rule.sources and all(s.url.startswith("https://") for s in rule.sources), rule.id
        expected = CONDITIONS.get(rule.id, ())
        assert tuple(c.split()[-1] for c in rule.conditions) == expected, rule.id


def test_rules_beyond_the_spec_say_why_they_exist():
    for rule in catalogue.RULES:
        if rule.id not in SPEC:
            assert rule.sources[0].label.startswith("pgolf: "), rule.id


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
