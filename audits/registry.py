"""Check registration: one function per rule ID, found from the ID in one step."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from audits import catalogue
from audits.findings import Finding, Severity

if TYPE_CHECKING:
    from audits.context import AuditOptions
    from audits.submission import Submission

CheckFn = Callable[["Submission", "AuditOptions"], Iterable[Finding]]

CHECKS: dict[str, CheckFn] = {}


def check(rule_id: str) -> Callable[[CheckFn], CheckFn]:
    """Register `fn` as the check of `rule_id`. Its docstring is the rule's documentation."""

    def register(fn: CheckFn) -> CheckFn:
        if rule_id not in catalogue.BY_ID:
            raise ValueError(f"check {fn.__name__} names unknown rule {rule_id}")
        if rule_id in CHECKS:
            raise ValueError(f"rule {rule_id} already has a check ({CHECKS[rule_id].__name__})")
        CHECKS[rule_id] = fn
        return fn

    return register


def found(rule_id: str, message: str, *, severity: Severity | None = None, **fields) -> Finding:
    """A finding of `rule_id` with the catalogue's severity and source unless given."""
    rule = catalogue.get(rule_id)
    fields.setdefault("source", rule.primary_source)
    return Finding(rule=rule_id, severity=rule.severity if severity is None else severity,
                   message=message, **fields)


def doc(rule_id: str) -> str | None:
    fn = CHECKS.get(rule_id)
    return fn.__doc__ if fn else None
