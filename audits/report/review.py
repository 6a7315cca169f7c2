"""The audit as a review comment to post on a PR (`pgolf review`).

What a reviewer pastes has to fit a PR page: the verdict, the score the seed runs show, the
compliance with issue #1017's conditions in one line, then the findings the verdict rests on, one
per cause (rule, sentence, file:line, the line itself, the ruling that decided the rule where one
did), and the warnings one line each, in at most `TOP_LINES` lines. Everything else (the
compliance table, every finding with its evidence and excerpt, the notes, the smoke test) is
folded in a `<details>` block. The output depends only on the folder's content: no time, no
absolute path, a fixed order, so two reviews of the same folder are the same bytes and can be
diffed.
"""

from __future__ import annotations

import math

from audits import __version__, catalogue
from audits.compliance import condition_results, rule_results, unchecked_lines
from audits.context import AuditOptions
from audits.engine import AuditReport, SubmissionReport, level_of
from audits.findings import Finding, Severity
from audits.registry import PASS, REPO
from audits.report.neutral import code, fence, markdown
from audits.report.paths import REPO_PATH_RULES, repo_location
from audits.rules import smoke as smoke_rules
from audits.stats import mean, sample_var
from audits.submission import LOG_LIMIT, Submission, read_bounded, runs

SMOKE_RULES = tuple(rule.id for rule in smoke_rules.RULES)
TOP_LINES = 30  # lines of one submission's review before its folded part
EXCERPT_CONTEXT = 2  # lines shown before and after a finding's line in the folded part
EXCERPT_WIDTH = 160  # longer lines (a wrapper's payload) are cut

# The organizers' rulings and the reviewers' standard a rule applies, linked where the rule blocks:
# issue #1017 (the four conditions), issue #677 (the sweep that closed adapt-before-score TTT and
# late or validation GPTQ), PR #779 (the n-gram ruling) and the leaderboard update PR #1902 (its
# exclusions: byte mixtures, pre-quantization TTT).
FIELD_GUIDE = ("issue #1017", f"{REPO}/issues/1017")
RULINGS = {
    "TTT_SCORE_AFTER_ADAPT": ("issue #677", f"{REPO}/issues/677"),
    "PREQUANT_TTT_ON_VAL": ("PR #1902", f"{REPO}/pull/1902"),
    "GPTQ_CALIB_ON_VAL": ("issue #677", f"{REPO}/issues/677"),
    "GPTQ_CALIB_AFTER_BUDGET": ("issue #677", f"{REPO}/issues/677"),
    "NGRAM_TARGET_IN_KEY": ("PR #779", f"{REPO}/pull/779"),
    "NGRAM_NOT_NORMALIZED": ("PR #779", f"{REPO}/pull/779"),
    "REALIZED_TOKEN_GATE": ("PR #779", f"{REPO}/pull/779"),
    "BYTE_MIXTURE_NOT_NORMALIZED": ("PR #1902", f"{REPO}/pull/1902"),
}


def render_review(report: AuditReport) -> str:
    parts = [_submission(r, report.options) for r in report.submissions]
    o = report.options
    footer = (f"<sub>pgolf {__version__} · Python target {o.python_label} ({o.python_origin}) · "
              "`pgolf review` output is deterministic: rerun it to diff.</sub>")
    return "\n\n---\n\n".join(parts) + "\n\n" + footer + "\n"


def rulings(rule_id: str) -> list[tuple[str, str]]:
    """(label, address) of the rulings a rule rests on: #1017 for the conditions, then its own."""
    out = [FIELD_GUIDE] if catalogue.get(rule_id).conditions else []
    if rule_id in RULINGS:
        out.append(RULINGS[rule_id])
    return out


def _one_per_place(findings: list[Finding]) -> list[Finding]:
    """The findings with one per place and rule: where a rule says two things of one line (a WARN
    reading and an INFO one), the more severe."""
    def key(f: Finding) -> tuple:
        return (f.rule, f.file, f.line) if f.file and f.line else (f.rule, f.file, f.message)

    best: dict[tuple, Finding] = {}
    for f in findings:
        if key(f) not in best or f.severity > best[key(f)].severity:
            best[key(f)] = f
    return [f for f in findings if best[key(f)] is f]


def _grouped_by_rule(findings: list[Finding]) -> list[list[Finding]]:
    """The findings grouped by rule, in the order their rules first appear: one cause each."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.rule, []).append(f)
    return list(groups.values())


def _title(sub: Submission) -> str:
    return sub.repo_rel or sub.name


def _submission(r: SubmissionReport, o: AuditOptions) -> str:
    sub = r.submission
    active = _one_per_place([f for f in r.findings if f.waived is None])
    counts = {s: sum(1 for f in active if f.severity == s) for s in Severity}
    verdict = "ERROR" if r.errors else r.verdict(o.strict)
    top = [f"**pgolf review: {verdict}** for {code(_title(sub))}: {counts[Severity.FAIL]} FAIL, "
           f"{counts[Severity.WARN]} WARN, {counts[Severity.INFO]} INFO."
           + (f" Smoke import in a weaker {r.weaker_sandbox()}." if r.weaker_sandbox() else ""), "", _score(sub), "",
           _compliance_line(r, o)]
    tested = [f for f in active if f.rule == "NOT_SIGNIFICANT" and f.severity == Severity.INFO]
    if tested:  # the README's significance test, when it ran and does not block
        top += ["", f"**Significance:** {markdown(tested[0].message)}."]
    for error in r.errors:
        top += ["", f"**pgolf internal error:** {markdown(error)}"]
    blocking = _grouped_by_rule([f for f in active if level_of(f, o.strict) != PASS])
    warned = _grouped_by_rule([f for f in active if level_of(f, o.strict) == PASS and f.severity == Severity.WARN])
    folded = 0
    if blocking:
        top += ["", "**Why:**"]
        for group in blocking:
            block = _deciding(sub, group)
            if len(top) + len(block) > TOP_LINES - 2:
                folded += 1
                continue
            top += block
    if warned:
        lines = [_warned(sub, group) for group in warned]
        room = TOP_LINES - 2 - len(top) - 2
        if room > 0:
            top += ["", "**To check (WARN):**"] + lines[:room]
        folded += max(0, len(lines) - max(room, 0))
    if folded:
        top += ["", f"{folded} more cause(s) in the details below."]
    waived = [f for f in r.findings if f.waived is not None]
    if waived:
        top += ["", "Waived: " + "; ".join(f"`{f.rule}` ({markdown(f.waived)})" for f in waived)]
    details = _details(r, o, active)
    return "\n".join(top + ["", "<details><summary>Details: compliance per condition, every finding "
                                "with its evidence, notes, smoke test</summary>", "", details, "",
                                "</details>"])


def _score(sub: Submission) -> str:
    """The headline: the mean and spread of the seed runs' final scores (what the README's
    significance test uses), which pass was taken, and the logs left out and why."""
    head = runs.headline(sub)
    scored = sorted(((log, log.parsed.score) for log in head.logs.values()), key=lambda ls: ls[0].rel)
    scored = [(log, s) for log, s in scored if math.isfinite(s.val_bpb)]
    claim = sub.claims.val_bpb if sub.claims is not None else None
    apart = ("" if not head.apart else " Left out: " + "; ".join(
        f"{code(rel)} ({markdown(why)})" for rel, why in sorted(head.apart.items())) + ".")
    if not scored:
        claimed = f"submission.json claims **{claim}**" if claim is not None else "nor does submission.json"
        return f"**Score:** no log reaches a final score; {claimed}.{apart}"
    values = [s.val_bpb for _, s in scored]
    spread = f" ± {math.sqrt(sample_var(values)):.5f} (std)" if len(values) > 1 else ""
    per_log = ", ".join(f"{code(f'{log.rel}:{s.line}')} {s.val_bpb}" for log, s in scored)
    passes = sorted({s.name for _, s in scored})
    if claim is not None:
        claimed = f"submission.json claims **{claim}**"
    else:
        claimed = (f"submission.json claims none, so each run's last scored pass "
                   f"({', '.join(code(p) for p in passes)}) is taken")
    return (f"**Score:** **{mean(values):.5f}**{spread} over {len(values)} seed run(s) "
            f"({per_log}); {claimed}.{apart}")


def _compliance_line(r: SubmissionReport, o: AuditOptions) -> str:
    label, url = FIELD_GUIDE
    if not r.submission.scripts:
        return f"**Compliance** ([{label}]({url})): not checked, no script is shipped."
    parts = [f"{c.condition.split()[-1]} {c.status}" for c in condition_results(rule_results(r, o))]
    return f"**Compliance** ([{label}]({url})'s conditions): {' · '.join(parts)}."


def _links(rule_id: str) -> str:
    found = rulings(rule_id)
    return " (" + ", ".join(f"[{label}]({url})" for label, url in found) + ")" if found else ""


def _place(sub: Submission, f: Finding) -> str:
    """Where a finding is, as short as the review's title allows: inside the folder, the path in
    it; outside (a file the PR also changes), the repository's path."""
    return f.location() if f.rule not in REPO_PATH_RULES else repo_location(sub, f)


def _deciding(sub: Submission, group: list[Finding]) -> list[str]:
    """One blocking cause: the rule, the first finding's place and sentence, the other places, the
    line itself, the ruling."""
    f = group[0]
    where = f" at {code(_place(sub, f))}" if f.file else ""
    more = [_place(sub, g) for g in group[1:] if g.file]
    also = f" (also {', '.join(code(m) for m in more[:3])}{', ...' if len(more) > 3 else ''})" if more else ""
    out = [f"- **{f.severity}** `{f.rule}`{where}{also}: {markdown(f.message)}.{_links(f.rule)}"]
    line = _line_excerpt(sub, f)
    if line:
        out += ["  " + row for row in fence(line).splitlines()]
    return out


def _warned(sub: Submission, group: list[Finding]) -> str:
    f = group[0]
    where = f" at {code(_place(sub, f))}" if f.file else ""
    count = f" ({len(group)}×)" if len(group) > 1 else ""
    return f"- `{f.rule}`{count}{where}: {markdown(f.message)}."


def _details(r: SubmissionReport, o: AuditOptions, active: list[Finding]) -> str:
    sub = r.submission
    out = [_compliance_table(r, o)]
    problems = [f for f in active if f.severity > Severity.INFO]
    for f in problems:
        out += ["", _finding(sub, f)]
    notes = [f for f in active if f.severity == Severity.INFO and f.rule not in SMOKE_RULES]
    if notes:
        out += ["", "Noted (INFO):", ""]
        out += [f"- `{f.rule}`" + (f" at {code(repo_location(sub, f))}" if f.file else "")
                + f": {markdown(f.message)}" for f in notes]
    out += ["", _smoke(r)]
    return "\n".join(out)


def _compliance_table(r: SubmissionReport, o: AuditOptions) -> str:
    results = rule_results(r, o)
    out = ["| #1017 condition | result | rules |", "|---|---|---|"]
    none = not r.submission.scripts
    for c in condition_results(results):
        status = "not checked (no script)" if none else c.status
        out.append(f"| {c.condition} {c.title} | {status} | {', '.join(f'`{x}`' for x in c.rules)} |")
    checked = [rule for rule, status in results.items() if status != "not checked"]
    others = [rule for rule in checked if not catalogue.get(rule).conditions]
    passed = [rule for rule in others if results[rule] == "pass"]
    out += ["", f"Also checked: {len(others)} rules on layout, metadata, budgets and inputs; "
            f"{len(passed)} pass" + (", the rest are below." if len(passed) < len(others) else ".")]
    out += unchecked_lines(results, o, version="this version")
    return "\n".join(out)


def _finding(sub: Submission, f: Finding) -> str:
    rule = catalogue.get(f.rule)
    head = f"#### {f.severity} `{f.rule}`" + (f" at {code(repo_location(sub, f))}" if f.file else "")
    out = [head, "", markdown(f.message) + "."]
    if f.via:
        out.append(f"(The line is {markdown(f.via)}.)")
    excerpt = _excerpt(sub, f)
    if excerpt:
        out += ["", fence(excerpt)]
    elif f.evidence:
        out += ["", fence(f.evidence)]
    if f.hint:
        out += ["", f"Fix: {markdown(f.hint)}"]
    conditions = f" ({', '.join(rule.conditions)})" if rule.conditions else ""
    out += ["", f"Rule{conditions}: {rule.summary} Source: {f.source}."]
    return "\n".join(out)


def _lines_of(sub: Submission, rel: str, via: bool) -> list[str] | None:
    """The text lines a finding's line number counts in: a script's (unwrapped) source, the
    claims, the README, or a log read again from the folder."""
    script = sub.scripts.get(rel)
    if script is not None:
        text = script.source if via else script.text
        return text.splitlines() if text is not None else None
    if rel == "submission.json" and sub.claims is not None:
        return sub.claims.text.splitlines()
    if rel == "README.md" and sub.readme is not None:
        return sub.readme.splitlines()
    if any(log.rel == rel for log in sub.logs):
        try:
            data, _ = read_bounded(sub.root / rel, LOG_LIMIT)
        except OSError:
            return None
        return data.decode("utf-8", "replace").splitlines()
    return None


def _cut(text: str) -> str:
    return text[:EXCERPT_WIDTH] + f"... ({len(text):,} characters)" if len(text) > EXCERPT_WIDTH else text


def _line_excerpt(sub: Submission, f: Finding) -> str | None:
    """The finding's own line, numbered, for the short part of the review."""
    if not f.file or not f.line or f.rule in REPO_PATH_RULES:
        return None
    lines = _lines_of(sub, f.file, f.via is not None)
    if not lines or f.line > len(lines) or not lines[f.line - 1].strip():
        return None
    return f"{f.line} | {_cut(lines[f.line - 1].rstrip())}"


def _excerpt(sub: Submission, f: Finding) -> str | None:
    if not f.file or not f.line or f.rule in REPO_PATH_RULES:
        return None
    lines = _lines_of(sub, f.file, f.via is not None)
    if not lines or f.line > len(lines):
        return None
    first = max(1, f.line - EXCERPT_CONTEXT)
    last = min(len(lines), f.line + EXCERPT_CONTEXT)
    width = len(str(last))
    return "\n".join(f"{'>' if n == f.line else ' '} {n:>{width}} | {_cut(lines[n - 1])}".rstrip()
                     for n in range(first, last + 1))


def _smoke(r: SubmissionReport) -> str:
    smoke = [f for f in r.findings if f.rule in SMOKE_RULES]
    if not smoke:
        return "**Smoke test:** did not run (this review ran no sandboxed CPU import)."
    said = []
    for f in smoke:
        if f.severity == Severity.INFO and f.message.startswith(smoke_rules.PASSED):
            said.append("passed: " + markdown(f.message[len(smoke_rules.PASSED):].lstrip(": ")) + ".")
        else:
            said.append(f"{f.severity} `{f.rule}`: {markdown(f.message)}.")
    return "**Smoke test:** " + " ".join(said)
