"""The catalogue as text: `pgolf audit --list-rules` and `--explain RULE`."""

from __future__ import annotations

import inspect

from audits import catalogue, registry


def rules_table() -> str:
    lines = []
    for family in dict.fromkeys(rule.family for rule in catalogue.RULES):
        lines.append(f"{family}:")
        for rule in catalogue.RULES:
            if rule.family == family:
                status = "" if rule.id in registry.CHECKS else "  (not checked by this version)"
                lines.append(f"  {rule.id:<28} {rule.severity!s:<4}  {rule.level:<12}  {rule.summary}{status}")
    return "\n".join(lines) + "\n"


def explain(rule_id: str) -> str:
    rule = catalogue.get(rule_id)
    out = [f"{rule.id} ({rule.severity}, blocks as {rule.level}, {rule.family})", "", rule.summary, ""]
    if rule.conditions:
        out.append("Conditions: " + ", ".join(rule.conditions))
    out.append("Sources:")
    out.extend(f"  - {source}" for source in rule.sources)
    doc = registry.doc(rule_id)
    out.append("")
    out.append(inspect.cleandoc(doc) if doc else "Not checked by this version of pgolf.")
    return "\n".join(out) + "\n"
