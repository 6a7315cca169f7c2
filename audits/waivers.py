"""Waivers, each with its reason: per rule for the whole audit (`[tool.pgolf.waivers]` in
pyproject.toml, a file of `RULE_ID: reason` lines, `--waive RULE_ID=reason`, later ones winning),
and per line from `# pgolf: waive RULE reason` comments in the submission's code."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from audits import catalogue
from audits.findings import Finding, Severity
from audits.submission import InputError, Submission
from audits.submission.inline_waivers import inline_waivers

MAX_WAIVER_FILE = 64 * 1024


def parse_waiver(text: str, where: str) -> tuple[str, str]:
    for sep in ("=", ":"):
        if sep in text:
            rule, reason = (part.strip() for part in text.split(sep, 1))
            break
    else:
        raise InputError(f"{where}: waiver {text!r} has no reason; write RULE_ID=reason")
    if rule not in catalogue.BY_ID:
        raise InputError(f"{where}: unknown rule {rule!r}; `pgolf audit --list-rules` lists them")
    if not reason:
        raise InputError(f"{where}: waiver of {rule} has an empty reason; say why it does not apply")
    return rule, reason


def load_waivers(cli: tuple[str, ...], files: tuple[str, ...],
                 configured: Mapping[str, str] = {}, configured_at: str = "") -> dict[str, str]:
    waivers: dict[str, str] = {}
    for rule, reason in configured.items():
        rule, reason = parse_waiver(f"{rule}={reason}", f"{configured_at} [tool.pgolf.waivers]")
        waivers[rule] = reason
    for path in files:
        p = Path(path)
        try:
            data = p.read_bytes()[: MAX_WAIVER_FILE + 1]
        except OSError as exc:
            raise InputError(f"{path}: cannot read the waivers file ({exc.strerror})") from exc
        if len(data) > MAX_WAIVER_FILE:
            raise InputError(f"{path}: waivers file over 64 KiB; it should be a few lines")
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if line:
                rule, reason = parse_waiver(line, f"{path}:{number}")
                waivers[rule] = reason
    for text in cli:
        rule, reason = parse_waiver(text, "--waive")
        waivers[rule] = reason
    return waivers


def apply_waivers(findings: list[Finding], sub: Submission, waivers: Mapping[str, str],
                  comments: bool = True) -> list[Finding]:
    """`findings` with the waived ones marked with their reason: by `waivers`, and by the code's
    waiver comments unless `comments` is off. A comment in a file the change under audit adds or
    modifies waives nothing: the change does not configure its own audit. INFO findings are never
    waived: they block nothing."""
    by_place = {}
    touched = _touched(sub)
    for w in inline_waivers(sub) if comments else ():
        if w.rule in catalogue.BY_ID and w.reason and (touched is not None and w.file not in touched):
            by_place.setdefault((w.file, w.target, w.unwrapped, w.rule), w.reason)
    out = []
    for f in findings:
        reason = waivers.get(f.rule)
        if reason is None and f.file and f.line:
            reason = by_place.get((f.file, f.line, f.via is not None, f.rule))
        if reason is not None and f.severity > Severity.INFO:
            f = dataclasses.replace(f, waived=reason)
        out.append(f)
    return out


def _touched(sub: Submission) -> set[str] | None:
    """The submission's files (relative to its folder) that the change under audit adds or
    modifies: none without a change; None (every file) when the folder's place in it is unknown."""
    if sub.changes is None:
        return set()
    if sub.repo_rel is None:
        return None
    prefix = sub.repo_rel + "/"
    return {path[len(prefix):] for status, path in sub.changes if status != "D" and path.startswith(prefix)}
