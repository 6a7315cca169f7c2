"""The rule catalogue: every rule pgolf knows, in one index gathered from audits/rules, where each
rule's row, documentation and check live together. IDs are never reused or renamed."""

from __future__ import annotations

from audits import rules  # noqa: F401  (registers every rule)
from audits.registry import ROWS, Rule

RULES: tuple[Rule, ...] = tuple(ROWS.values())
BY_ID: dict[str, Rule] = ROWS


def get(rule_id: str) -> Rule:
    return BY_ID[rule_id]
