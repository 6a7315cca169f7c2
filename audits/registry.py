"""The registry: each rule's row (ID, severity, family, summary, sources) and its check, both
registered by the rule's own module in audits/rules, so a rule is found from its ID in one step;
and which rules an audit's options select.

    RULES = rules(Rule("SLOT", FAIL, "legality", "No per-window ...", (pr(1240),), (C1, C3)))

    @check("SLOT")
    def slot(sub, options):
        '''What it checks: ...'''        # the rule's documentation
        yield found("SLOT", "...")

IDs are never reused or renamed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from audits.findings import Finding, Severity

if TYPE_CHECKING:
    from audits.context import AuditOptions
    from audits.submission import Submission

REPO = "https://github.com/openai/parameter-golf"
FAIL, WARN = Severity.FAIL, Severity.WARN
# The verdicts, worst first. A rule's level is the verdict its blocking findings push toward:
# ILLEGAL when the claimed score is invalid (#1017 C1-C4, data rules, budgets, the cap), NEEDS_ACTION
# when the author must fix something before a review can go on (layout, files, imports, syntax).
ILLEGAL, NEEDS_ACTION, PASS = "ILLEGAL", "NEEDS_ACTION", "PASS"
LEVELS = (ILLEGAL, NEEDS_ACTION, PASS)
C1, C2, C3, C4 = (f"#1017 C{i}" for i in range(1, 5))


@dataclasses.dataclass(frozen=True)
class Source:
    label: str
    url: str

    def __str__(self) -> str:
        return f"{self.label} <{self.url}>"


def issue(number: int, note: str = "") -> Source:
    label = f"openai/parameter-golf#{number}" + (f" ({note})" if note else "")
    return Source(label, f"{REPO}/issues/{number}")


def pr(number: int, note: str = "") -> Source:
    label = f"PR #{number}" + (f" ({note})" if note else "")
    return Source(label, f"{REPO}/pull/{number}")


def readme(section: str) -> Source:
    return Source(f"challenge README, {section}", f"{REPO}#readme")


def pgolf(reason: str) -> Source:
    """A rule pgolf adds beyond the challenge's text; the reason says why it exists."""
    return Source(f"pgolf: {reason}", f"{REPO}#readme")


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    family: str
    summary: str
    sources: tuple[Source, ...]
    conditions: tuple[str, ...] = ()
    # The AuditOptions field that must be on for the rule to run (the causality probes cost
    # seconds of CPU; the smoke import runs code). With it off the rule is "not checked".
    needs_option: str | None = None
    level: str = ""  # ILLEGAL or NEEDS_ACTION; every row states it
    # Its place in its family's list, where the rows come from modules found in no order (one
    # module per legality rule); a family module lists its rows in order and leaves it 0.
    place: int = 0

    @property
    def primary_source(self) -> str:
        conds = ", ".join(self.conditions)
        first = self.sources[0].label if self.sources else ""
        return f"{conds}; {first}" if conds else first


@dataclasses.dataclass(frozen=True)
class Words:
    """What a finding says for one reading of a rule: the message (it may name {at}, {other}:
    the lines of the two operations, and {detail}), the hint, and for a contested reading the
    link where the question is open."""

    message: str
    hint: str = ""
    link: str | None = None
    origin: str = ""  # the note naming what makes it so, at {origin}, when the analysis found it


CheckFn = Callable[["Submission", "AuditOptions"], Iterable[Finding]]

ROWS: dict[str, Rule] = {}
CHECKS: dict[str, CheckFn] = {}
WORDS: dict[str, dict[str, Words]] = {}


def rules(*rows: Rule) -> tuple[Rule, ...]:
    """Register a family's rows; the catalogue lists them in the order they were registered."""
    for row in rows:
        if row.id in ROWS:
            raise ValueError(f"rule {row.id} is registered twice")
        if row.level not in (ILLEGAL, NEEDS_ACTION):
            raise ValueError(f"rule {row.id} states no level (ILLEGAL or NEEDS_ACTION)")
        ROWS[row.id] = row
    return rows


def words(rule_id: str, **readings: Words) -> dict[str, Words]:
    """Register what the findings of `rule_id` say, per reading (the analysis names the reading)."""
    if rule_id not in ROWS:
        raise ValueError(f"words for unregistered rule {rule_id}")
    WORDS[rule_id] = readings
    return readings


def check(rule_id: str) -> Callable[[CheckFn], CheckFn]:
    """Register `fn` as the check of `rule_id`. Its docstring is the rule's documentation."""

    def register(fn: CheckFn) -> CheckFn:
        if rule_id not in ROWS:
            raise ValueError(f"check {fn.__name__} names unregistered rule {rule_id}")
        if rule_id in CHECKS:
            raise ValueError(f"rule {rule_id} already has a check ({CHECKS[rule_id].__name__})")
        CHECKS[rule_id] = fn
        return fn

    return register


def found(rule_id: str, message: str, *, severity: Severity | None = None, **fields) -> Finding:
    """A finding of `rule_id` with the registered severity and source unless given."""
    rule = ROWS[rule_id]
    fields.setdefault("source", rule.primary_source)
    return Finding(rule=rule_id, severity=rule.severity if severity is None else severity,
                   message=message, **fields)


def selected(rule_id: str, options: AuditOptions) -> bool:
    """Whether the rule runs: chosen by --only/--skip, and its option on where it needs one
    (the causality probes when asked for, the smoke import unless turned off); with the
    option off it is "not checked", never "pass"."""
    if not option_on(rule_id, options):
        return False
    if options.only and rule_id not in options.only:
        return False
    return rule_id not in options.skip


def option_on(rule_id: str, options: AuditOptions) -> bool:
    option = ROWS[rule_id].needs_option
    return option is None or getattr(options, option)


def doc(rule_id: str) -> str | None:
    fn = CHECKS.get(rule_id)
    return fn.__doc__ if fn else None
