"""The legality rules' findings: the analysis' verdicts of one rule, placed in the (unwrapped)
source and quoted. One run of the analysis per submission serves every rule."""

from __future__ import annotations

import dataclasses
import re

from audits import legality
from audits.findings import Severity
from audits.registry import ROWS, WORDS, found
from audits.submission import runsettings

_WRAPPER = re.compile(r"exec\s*\(.*(decompress|b85decode|b64decode)", re.S)


def findings(sub, rule: str):
    """The findings of `rule`, placed in the (unwrapped) source and explained."""
    result = legality.analyse(sub)
    for rel, why in result.unparsed.items():
        yield found(rule, f"{rel} was not checked: {why}", severity=Severity.INFO,
                    file=rel, unchecked=True)
    for rel, script in sorted(sub.scripts.items()):
        parsed = result.scripts.get(rel)
        if script.unwrapped is None and parsed is not None and _is_wrapper(parsed):
            yield found(rule, f"{rel} is a self-extracting wrapper whose code was not unwrapped, so "
                        "it was not checked", severity=Severity.INFO, file=rel, unchecked=True)
    on = runsettings.turned_on(sub)
    for verdict in sorted(result.of(rule), key=_order):
        yield _finding(sub, result, *_as_run(verdict, on))


def _as_run(v, on: dict[str, str]):
    """A verdict behind settings that are off by default weighs what it would with them on, when
    the folder's own runs turned every one of them on (its launch script, its README's command,
    its logs' hyperparameters); returns it and where each setting was turned on."""
    names = [s[: -len(" is set")] for s in v.settings if s.endswith(" is set")]
    if not v.settings or len(names) != len(v.settings) or not all(n in on for n in names):
        return v, ()
    return dataclasses.replace(v, severity=v.ungated, settings=()), tuple(on[n] for n in names)


def _is_wrapper(parsed) -> bool:
    """A few statements that exec a decoded payload: the code that runs is not in the file."""
    return len(parsed.module.body) <= 4 and bool(_WRAPPER.search(parsed.source[:1024] + parsed.source[-1024:]))


def _order(verdict):
    at = verdict.site.position()
    return (verdict.site.inner_fn.script.rel, at.start.line if at else 0, -int(verdict.severity))


def _finding(sub, result, v, turned_on=()):
    script = v.site.inner_fn.script
    at = v.site.position()
    line = at.start.line if at else None
    other_line = None
    evidence = [_excerpt(script, at)] if at else []
    if v.other is not None:
        other_script = v.other.inner_fn.script
        other_at = v.other.position()
        if other_at is not None:
            other_line = other_at.start.line
            where = "" if other_script is script else f"{other_script.rel}:"
            evidence.append(_excerpt(other_script, other_at, where))
    call_at = v.site.call_position()
    if call_at is not None and call_at.start.line != line:
        evidence.append(f"(reached through the call at line {call_at.start.line})")
    words = WORDS[v.rule][v.kind]
    message = words.message.format(at=f"line {line}", other=f"line {other_line}", detail=v.detail)
    message += _notes(v)
    if turned_on:
        message += f" (the run turned it on: {'; '.join(turned_on)})"
    source = ROWS[v.rule].primary_source + (f"; contested, see {words.link}" if words.link else "")
    shipped = sub.scripts.get(script.rel)
    return found(v.rule, message, severity=v.severity, file=script.rel, line=line,
                 column=at.start.column if at else None, evidence="\n".join(evidence),
                 hint=words.hint, via=shipped.via(line) if shipped is not None else None,
                 source=source, confidence="medium" if words.link else "high")


def _notes(v) -> str:
    """Why a verdict weighs less than its reading: code that runs only with settings changed,
    from a side script, or never."""
    notes = ""
    if v.settings:
        notes += f" (only when {' and '.join(v.settings)}; not with the default settings)"
    if v.side_script:
        notes += " (in a script the entry point does not run)"
    if v.unreachable:
        notes += " (in code the entry point never reaches)"
    return notes


def _excerpt(script, at, where: str = "") -> str:
    """The lines of a node, each with its number (`71: opt.step()`)."""
    lines = script.excerpt(at.start.line, at.end.line).split("\n")
    return "\n".join(f"{where}{at.start.line + i}: {text}" if text != "..." else text
                     for i, text in enumerate(lines))
