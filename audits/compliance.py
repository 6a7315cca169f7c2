"""The compliance verdict of one audited submission: per rule, and per #1017 condition.

Built only from the audit's findings and from which rules this version of pgolf checks, so a
statement like "C3 pass" means a check ran and found nothing, never that someone said so.
"""

from __future__ import annotations

import dataclasses

from audits import catalogue
from audits.context import AuditOptions
from audits.engine import SubmissionReport
from audits.findings import Severity
from audits.registry import CHECKS, option_on, selected

CONDITIONS = {
    "#1017 C1": "strict causal dependence",
    "#1017 C2": "full normalized distribution",
    "#1017 C3": "score before update",
    "#1017 C4": "single left-to-right pass",
}
_BY_SEVERITY = {Severity.FAIL: "fail", Severity.WARN: "warn"}


@dataclasses.dataclass(frozen=True)
class ConditionResult:
    condition: str  # "#1017 C1"
    title: str
    status: str  # pass, warn, fail, waived, partly checked, not checked
    rules: tuple[str, ...]  # the rules that test it, in catalogue order


def checked(rule: catalogue.Rule, options: AuditOptions) -> bool:
    """Whether this version of pgolf decides `rule`."""
    return selected(rule.id, options) and rule.id in CHECKS


def unchecked_lines(results: dict[str, str], options: AuditOptions, *, version: str) -> list[str]:
    """The sentences naming the rules without a result: those whose option was off in this audit,
    and the rest, which `version` (the renderer's wording of "this version of pgolf") did not
    decide."""
    missing = [rule for rule, status in results.items() if status == "not checked"]
    off = [rule for rule in missing if not option_on(rule, options)]
    other = [rule for rule in missing if rule not in off]
    lines = []
    if other:
        lines.append(f"Not checked by {version}: " + ", ".join(f"`{r}`" for r in other) + ".")
    if off:
        lines.append("Not run (option off): " + ", ".join(
            f"`{r}` (`pgolf audit --{catalogue.get(r).needs_option}`)" for r in off) + ".")
    return lines


def rule_results(report: SubmissionReport, options: AuditOptions) -> dict[str, str]:
    """Every catalogue rule, in catalogue order: fail, warn, waived, pass or not checked (no check
    in this version, deselected, or a check that said it could not decide)."""
    results = {}
    for rule in catalogue.RULES:
        findings = [f for f in report.findings if f.rule == rule.id]
        active = [f for f in findings if f.waived is None and f.severity > Severity.INFO]
        if active:
            results[rule.id] = _BY_SEVERITY[max(f.severity for f in active)]
        elif any(f.waived for f in findings):
            results[rule.id] = "waived"
        elif any(f.unchecked for f in findings):
            results[rule.id] = "not checked"
        elif checked(rule, options):
            results[rule.id] = "pass"
        else:
            results[rule.id] = "not checked"
    return results


def condition_results(results: dict[str, str]) -> list[ConditionResult]:
    out = []
    for condition, title in CONDITIONS.items():
        rules = tuple(r.id for r in catalogue.RULES if condition in r.conditions)
        statuses = [results[r] for r in rules]
        if "fail" in statuses:
            status = "fail"
        elif "warn" in statuses:
            status = "warn"
        elif "waived" in statuses:
            status = "waived"
        elif all(s == "not checked" for s in statuses):
            status = "not checked"
        elif "not checked" in statuses:
            status = "partly checked"
        else:
            status = "pass"
        out.append(ConditionResult(condition, title, status, rules))
    return out
