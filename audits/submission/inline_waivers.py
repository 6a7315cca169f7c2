"""Waiver comments in a submission's code: `# pgolf: waive RULE reason`.

A comment waives RULE's findings on its own line, or, standing alone on its line, on the next
line. A wrapper's unwrapped source is read too: its comments waive findings in that source.
The marker is found by a line pattern, so a string holding it counts as well: the author wrote
both. The reason is required; a comment without one, or naming no known rule, waives nothing
(INLINE_WAIVER_INVALID reports it).
"""

from __future__ import annotations

import dataclasses
import re

from audits.submission import Submission

MARKER = re.compile(r"#\s*pgolf:\s*waive\b(.*)$")
_RULE = re.compile(r"\s*([A-Za-z0-9_]+)\s*(.*)$")
MAX_REASON = 300  # a reason is a sentence; the report shows it in full


@dataclasses.dataclass(frozen=True)
class InlineWaiver:
    file: str
    line: int  # where the comment is
    target: int  # the line whose findings it waives
    unwrapped: bool  # in a wrapper's unwrapped source, not the shipped file
    rule: str  # as written; may be empty or unknown
    reason: str


def inline_waivers(sub: Submission) -> list[InlineWaiver]:
    out = []
    for rel, script in sorted(sub.scripts.items()):
        sources = [(script.text, False)]
        if script.unwrapped is not None:
            sources.append((script.unwrapped, True))
        for text, unwrapped in sources:
            if text is None or "pgolf" not in text:
                continue
            lines = text.splitlines()
            for number, line in enumerate(lines, 1):
                match = MARKER.search(line)
                if match is None:
                    continue
                rule_match = _RULE.match(match.group(1))
                rule, reason = rule_match.groups() if rule_match else ("", "")
                alone = line[:match.start()].strip() == ""
                target = _next_code_line(lines, number) if alone else number
                out.append(InlineWaiver(rel, number, target, unwrapped, rule,
                                        reason.strip()[:MAX_REASON]))
    return out


def _next_code_line(lines: list[str], number: int) -> int:
    for n in range(number + 1, len(lines) + 1):
        stripped = lines[n - 1].strip()
        if stripped and not stripped.startswith("#"):
            return n
    return number
