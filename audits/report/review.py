"""The audit as a review comment to post on a PR (`pgolf review`).

A one-line verdict first, then the BPB the logs show against the claim, the compliance verdict
with issue #1017's conditions, each finding with its file:line and an excerpt of that line, the
smoke-test line, and a footer naming the pgolf version and the Python target. The output depends
only on the folder's content: no time, no absolute path, a fixed order, so two reviews of the
same folder are the same bytes and can be diffed.
"""

from __future__ import annotations

import math

from audits import __version__, catalogue
from audits.compliance import condition_results, rule_results, unchecked_lines
from audits.context import AuditOptions
from audits.engine import AuditReport, SubmissionReport
from audits.findings import Finding, Severity
from audits.report.neutral import code, fence, markdown
from audits.report.paths import REPO_PATH_RULES, repo_location
from audits.stats import mean, sample_var
from audits.submission import LOG_LIMIT, Submission, read_bounded, runs

SMOKE_RULES = ("IMPORT_FAIL", "IMPORT_STUB_LIMIT")  # the smoke import reports a pass as an IMPORT_FAIL INFO
EXCERPT_CONTEXT = 2  # lines shown before and after a finding's line
EXCERPT_WIDTH = 160  # longer lines (a wrapper's payload) are cut


def render_review(report: AuditReport) -> str:
    parts = [_submission(r, report.options) for r in report.submissions]
    o = report.options
    footer = (f"<sub>pgolf {__version__} · Python target {o.python_label} ({o.python_origin}) · "
              "`pgolf review` output is deterministic: rerun it to diff.</sub>")
    return "\n\n---\n\n".join(parts) + "\n\n" + footer + "\n"


def _title(sub: Submission) -> str:
    return sub.repo_rel or sub.name


def _submission(r: SubmissionReport, o: AuditOptions) -> str:
    sub = r.submission
    active = [f for f in r.findings if f.waived is None]
    counts = r.counts()
    verdict = r.verdict(o.strict)
    if r.errors:
        verdict = "ERROR"
    failing = list(dict.fromkeys(f.rule for f in active if f.severity == Severity.FAIL))  # deciding first
    line = (f"**pgolf review: {verdict}** for {code(_title(sub))}: {counts[Severity.FAIL]} FAIL, "
            f"{counts[Severity.WARN]} WARN, {counts[Severity.INFO]} INFO"
            + (f" (failing: {', '.join(f'`{x}`' for x in failing)})" if failing else "") + ".")
    out = [line, "", _bpb(sub), "", _compliance(r, o)]
    problems = [f for f in active if f.severity > Severity.INFO]
    if problems:
        out += ["", "### Findings"]
        for f in problems:
            out += ["", _finding(sub, f)]
    notes = [f for f in active if f.severity == Severity.INFO]
    if notes:
        out += ["", "<details><summary>Noted (INFO)</summary>", ""]
        out += [f"- `{f.rule}`" + (f" at {code(repo_location(sub, f))}" if f.file else "") + f": {markdown(f.message)}"
                for f in notes]
        out += ["", "</details>"]
    waived = [f for f in r.findings if f.waived is not None]
    if waived:
        out += ["", "Waived: " + "; ".join(f"`{f.rule}` ({markdown(f.waived)})" for f in waived)]
    for error in r.errors:
        out += ["", f"**pgolf internal error:** {markdown(error)}"]
    out += ["", _smoke(r)]
    return "\n".join(out)


def _bpb(sub: Submission) -> str:
    headline = runs.headline_logs(sub).values()  # one run per seed: reruns and ablations apart
    scored = [(log, log.parsed.score) for log in sorted(headline, key=lambda l: l.rel)]
    scored = [(log, s) for log, s in scored if math.isfinite(s.val_bpb)]
    claim = sub.claims.val_bpb if sub.claims is not None else None
    claimed = (f"submission.json claims **{claim}**" if claim is not None
               else "submission.json claims no val_bpb")
    if not scored:
        return f"**BPB:** no log has a final score; {claimed}."
    values = [s.val_bpb for _, s in scored]
    spread = f" ± {math.sqrt(sample_var(values)):.5f} (std)" if len(values) > 1 else ""
    per_log = ", ".join(f"{code(f'{log.rel}:{s.line}')} {s.val_bpb}" for log, s in scored)
    return (f"**BPB:** the logs' final scores average **{mean(values):.8f}**{spread} over "
            f"{len(values)} log(s) ({per_log}); {claimed}.")


def _compliance(r: SubmissionReport, o: AuditOptions) -> str:
    results = rule_results(r, o)
    out = ["**Compliance** (issue #1017's conditions, decided only by rules this version checks):", "",
           "| condition | result | rules |", "|---|---|---|"]
    for c in condition_results(results):
        out.append(f"| {c.condition} {c.title} | {c.status} | {', '.join(f'`{x}`' for x in c.rules)} |")
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


def _excerpt(sub: Submission, f: Finding) -> str | None:
    if not f.file or not f.line or f.rule in REPO_PATH_RULES:
        return None
    lines = _lines_of(sub, f.file, f.via is not None)
    if not lines or f.line > len(lines):
        return None
    first = max(1, f.line - EXCERPT_CONTEXT)
    last = min(len(lines), f.line + EXCERPT_CONTEXT)
    width = len(str(last))
    out = []
    for n in range(first, last + 1):
        text = lines[n - 1]
        if len(text) > EXCERPT_WIDTH:
            text = text[:EXCERPT_WIDTH] + f"... ({len(text):,} characters)"
        out.append(f"{'>' if n == f.line else ' '} {n:>{width}} | {text}".rstrip())
    return "\n".join(out)


def _smoke(r: SubmissionReport) -> str:
    smoke = [f for f in r.findings if f.rule in SMOKE_RULES]
    if not smoke:
        return "**Smoke test:** did not run (this review ran no sandboxed CPU import)."
    return "**Smoke test:** " + " ".join(f"{f.severity} `{f.rule}`: {markdown(f.message)}." for f in smoke)
