"""What a check reports: a finding with its rule, severity, place and evidence."""

from __future__ import annotations

import dataclasses
import enum


class Severity(enum.IntEnum):
    """How much a finding weighs. Ordered, so `severity >= threshold` reads naturally."""

    INFO = 0
    WARN = 1
    FAIL = 2

    def __str__(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True)
class Finding:
    """One observation about a submission.

    `file` is relative to the submission folder; `line` and `column` point into that file, or into
    its unwrapped source when `via` says the file is a self-extracting wrapper (lines are 1-based,
    columns 0-based). `evidence` is the text the finding rests on (a log line, a code excerpt);
    `hint` says what to do; `source` is the rule text or ruling behind it. `unchecked` marks an
    INFO saying the rule could not be decided here (no --base, a file that does not parse), so
    that summaries never count it as a pass.
    """

    rule: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    evidence: str = ""
    hint: str = ""
    source: str = ""
    via: str | None = None
    confidence: str = "high"
    waived: str | None = None
    unchecked: bool = False

    def location(self) -> str:
        """`file:line:col` as far as known, for people and for editors."""
        if not self.file:
            return ""
        parts = [self.file]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "severity": str(self.severity),
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "evidence": self.evidence,
            "hint": self.hint,
            "source": self.source,
            "via": self.via,
            "confidence": self.confidence,
            "waived": self.waived,
            "unchecked": self.unchecked,
        }
