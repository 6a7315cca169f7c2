"""The rule catalogue: every rule pgolf knows, in one index gathered from audits/rules, where each
rule's row, documentation and check live together. IDs are never reused or renamed."""

from __future__ import annotations

from audits import rules  # noqa: F401  (registers every rule)
from audits.registry import ROWS, Rule

# Each family where its first row was registered; within a family, by the rows' place, then as
# registered (a family module lists its rows in order; legality's modules are found in no order).
_FAMILIES = list(dict.fromkeys(row.family for row in ROWS.values()))
RULES: tuple[Rule, ...] = tuple(sorted(ROWS.values(), key=lambda row: (_FAMILIES.index(row.family), row.place)))
BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def get(rule_id: str) -> Rule:
    return BY_ID[rule_id]
