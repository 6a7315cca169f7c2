"""Run every selected check on every submission, apply waivers, decide verdicts and exit code."""

from __future__ import annotations

import dataclasses
import traceback

from audits import catalogue, timelimit  # catalogue: every rule registers its check when imported
from audits.context import AuditOptions
from audits.findings import Finding, Severity
from audits.registry import CHECKS, LEVELS, PASS, ROWS, selected
from audits.rules import smoke as smoke_rules
from audits.smoke.isolation import Sandbox
from audits.submission import Problem, Submission
from audits.waivers import apply_waivers

TIME_LIMIT = "AUDIT_TIME_LIMIT"
_ORDER = {Severity.FAIL: 0, Severity.WARN: 1, Severity.INFO: 2}


def level_of(finding: Finding, strict: bool = False) -> str:
    """The verdict `finding` pushes toward: its rule's level when it blocks (an unwaived FAIL, or
    WARN with --strict), else PASS (a WARN is what a reviewer should read, not a block)."""
    threshold = Severity.WARN if strict else Severity.FAIL
    if finding.waived is None and finding.severity >= threshold:
        return ROWS[finding.rule].level
    return PASS


@dataclasses.dataclass
class SubmissionReport:
    submission: Submission
    findings: list[Finding]
    errors: list[str]  # internal errors of pgolf's own checks, with the check named
    sandbox: Sandbox | None = None  # the one the smoke import ran in; None where none ran

    def counted(self, strict: bool) -> list[Finding]:
        """Unwaived findings at or above the threshold: FAIL, and WARN with --strict."""
        return [f for f in self.findings if level_of(f, strict) != PASS]

    def counts(self) -> dict[Severity, int]:
        """How many unwaived findings of each severity."""
        return {s: sum(1 for f in self.findings if f.severity == s and f.waived is None)
                for s in Severity}

    def verdict(self, strict: bool = False) -> str:
        """ILLEGAL, NEEDS_ACTION or PASS: the worst level a finding pushes toward."""
        return min((level_of(f, strict) for f in self.findings), key=LEVELS.index, default=PASS)

    def weaker_sandbox(self) -> str | None:
        """The smoke import's sandbox level and what it leaves open, where it ran at a level short
        of the full one; for each output's verdict line."""
        return self.sandbox.weaker() if self.sandbox is not None else None

    def deciding(self, strict: bool = False) -> Finding | None:
        """The finding the verdict rests on (the findings are sorted so that it comes first)."""
        first = self.findings[0] if self.findings else None
        return first if first is not None and level_of(first, strict) != PASS else None


@dataclasses.dataclass
class AuditReport:
    options: AuditOptions
    submissions: list[SubmissionReport]

    @property
    def exit_code(self) -> int:
        if any(r.errors for r in self.submissions):
            return 2
        return 1 if any(r.counted(self.options.strict) for r in self.submissions) else 0


def _recorded(sub: Submission, rule_id: str) -> bool:
    return any(p.rule == rule_id for p in sub.problems)


def audit_submission(sub: Submission, options: AuditOptions) -> SubmissionReport:
    findings = []
    errors = []
    stopped_in, not_run = None, []
    # in the catalogue's order, the time limit's own check last: it reports what the others could not finish
    checks = [(rule.id, CHECKS[rule.id]) for rule in catalogue.RULES if rule.id in CHECKS]
    for rule_id, fn in sorted(checks, key=lambda item: item[0] == TIME_LIMIT):
        if not selected(rule_id, options):
            continue
        if rule_id == TIME_LIMIT:
            if (stopped_in or not_run) and not _recorded(sub, TIME_LIMIT):
                where = f"in the check of {stopped_in}" if stopped_in else "before these checks ran"
                sub.problems.append(Problem(TIME_LIMIT, timelimit.stopped(where, not_run), None,
                                            {"hint": "Audit the folder again with a longer --time-limit, "
                                                     "or read what was not checked by hand."}))
        elif timelimit.expired():
            not_run.append(rule_id)
            continue
        try:
            for finding in fn(sub, options):
                if finding.rule != rule_id:
                    raise AssertionError(f"check of {rule_id} reported {finding.rule}")
                findings.append(finding)
        except timelimit.Reached:
            stopped_in = rule_id
        except Exception:  # a bug in pgolf: report it, keep the other checks' results
            last = traceback.format_exc().strip().splitlines()[-1]
            errors.append(f"internal error in the check of {rule_id}: {last}")
    findings = apply_waivers(findings, sub, options.waivers, options.waiver_comments)
    # The finding that decides the verdict first: by the level it pushes toward, then severity.
    findings.sort(key=lambda f: (LEVELS.index(level_of(f, options.strict)), _ORDER[f.severity],
                                 f.rule, f.file or "", f.line or 0))
    return SubmissionReport(sub, findings, errors, smoke_rules.sandbox_used(sub, options))

