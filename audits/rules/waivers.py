"""The rule on the waivers a submission writes into its own code."""

from __future__ import annotations

from audits.registry import NEEDS_ACTION, ROWS, WARN, Rule, check, found, pgolf, rules
from audits.submission.inline_waivers import inline_waivers

RULES = rules(
    Rule("INLINE_WAIVER_INVALID", WARN, "waivers",
         "Each `# pgolf: waive RULE reason` comment names a known rule and says why it does not apply.",
         (pgolf("a waiver is a claim a reviewer has to weigh; without a reason there is nothing to weigh"),),
         level=NEEDS_ACTION),
)


@check("INLINE_WAIVER_INVALID")
def inline_waiver_invalid(sub, options):
    """What it checks: every `# pgolf: waive RULE reason` comment in the submission's Python files
    (and in a wrapper's unwrapped source) names a rule of the catalogue and gives a reason.

    Why it matters: an inline waiver silences a finding in the report; the reason is what the
    reviewer reads instead. A waiver without one, or naming a rule that does not exist (a typo),
    waives nothing, and this finding says so.

    Illegal: `# pgolf: waive SLOT` (no reason); `# pgolf: waive SLOTT because ...` (no such rule).

    Legal: `x = model(x)  # pgolf: waive BOS_CROSS_DOC_LEAK documents are packed with a reset mask`.

    Known limits: the marker is found by a line pattern, so a string that holds it counts as a
    comment.
    """
    for w in inline_waivers(sub):
        where = {"file": w.file, "line": w.line,
                 "via": sub.scripts[w.file].via(w.line) if w.unwrapped else None}
        if w.rule not in ROWS:
            yield found("INLINE_WAIVER_INVALID",
                        f"waiver comment names {'no rule' if not w.rule else 'unknown rule ' + repr(w.rule)}; "
                        "it waives nothing", **where,
                        hint="Write `# pgolf: waive RULE reason` with a rule from `pgolf audit --list-rules`.")
        elif not w.reason:
            yield found("INLINE_WAIVER_INVALID",
                        f"waiver of {w.rule} gives no reason; it waives nothing", **where,
                        hint=f"Say why {w.rule} does not apply: `# pgolf: waive {w.rule} REASON`.")
