"""The legality rules' findings: the analysis' verdicts of one rule, placed in the (unwrapped)
source and quoted. One run of the analysis per submission serves every rule."""

from __future__ import annotations

import dataclasses
import re

from audits import legality
from audits.legality import printed
from audits.findings import Severity
from audits.registry import ROWS, WORDS, found
from audits.submission import runsettings

_WRAPPER = re.compile(r"exec\s*\(.*(decompress|b85decode|b64decode)", re.S)


def findings(sub, rule: str, skip: frozenset[str] = frozenset(), weigh=None):
    """The findings of `rule`, placed in the (unwrapped) source and explained; `skip`: readings
    (verdict kinds) the rule weighs itself; `weigh(verdict)`: the verdict as the rule weighs it
    against the rest of the run, where it does."""
    result = legality.analyse(sub)
    for rel, why in result.unparsed.items():
        yield found(rule, f"{rel} was not checked: {why}", severity=Severity.INFO,
                    file=rel, unchecked=True)
    if result.skipped:
        yield found(rule, legality.not_checked(result.skipped), severity=Severity.INFO, unchecked=True)
    for rel, script in sorted(sub.scripts.items()):
        parsed = result.scripts.get(rel)
        if script.unwrapped is None and parsed is not None and _is_wrapper(parsed):
            yield found(rule, f"{rel} is a self-extracting wrapper whose code was not unwrapped, so "
                        "it was not checked", severity=Severity.INFO, file=rel, unchecked=True)
    on = runsettings.turned_on(sub)
    for name, where in printed.turned_on(result.prints, sub.logs).items():
        on.setdefault(name, where)
    off = runsettings.turned_off(sub)
    causes: dict[tuple, list] = {}
    for verdict in sorted((v for v in result.of(rule) if v.kind not in skip), key=_order):
        verdict = weigh(verdict) if weigh is not None else verdict
        verdict, turned_on = _as_run(verdict, on)
        verdict = _not_run(verdict, on, off)
        causes.setdefault(_cause(verdict), []).append((verdict, turned_on))
    for same in causes.values():
        # told from the verdict with the fewest caveats: a site both reached and not is reached
        first = min(same, key=lambda m: (m[0].unreachable, m[0].side_script, bool(m[0].settings)))
        yield _finding(sub, result, *first, also=[v for v, _ in same if v is not first[0]])


def _cause(v) -> tuple:
    """What makes verdicts one cause: the same reading, weighed the same, in the same function,
    about the same score (the reads of one answer-keyed table, the steps of one update loop, one
    site reached through several calls)."""
    other = v.other.position() if v.other is not None else None
    return (v.rule, v.kind, v.severity, v.site.inner_fn.script.rel, id(v.site.inner_fn),
            (v.other.inner_fn.script.rel, other.start.line) if other is not None else None)


def _as_run(v, on: dict[str, str]):
    """A verdict behind settings that are off by default weighs what it would with them on, when
    the folder's own runs turned every one of them on (its launch script, its README's command,
    its logs' hyperparameters, a log line only that setting's code prints); returns it and where
    each setting was turned on."""
    names = [s[: -len(" is set")] for s in v.settings if s.endswith(" is set")]
    if not v.settings or len(names) != len(v.settings) or not all(n in on for n in names):
        return v, ()
    return dataclasses.replace(v, severity=v.ungated, settings=()), tuple(on[n] for n in names)


def _not_run(v, on: dict[str, str], off: dict[str, str]):
    """A verdict in code that needs a setting as it is by default (`if h.ttt_enabled:` with
    TTT_ENABLED on by default), where the runs changed it (their logs or launch line set it to
    0): that code did not run, so the verdict is a note, saying where the runs changed it."""
    where = [off[name] if need else on[name] for name, need in v.defaults
             if (off if need else on).get(name)]
    if not where or v.severity == Severity.INFO:
        return v
    return dataclasses.replace(v, severity=Severity.INFO, settings=(),
                               not_run=tuple(where))


def _is_wrapper(parsed) -> bool:
    """A few statements that exec a decoded payload: the code that runs is not in the file."""
    return len(parsed.module.body) <= 4 and bool(_WRAPPER.search(parsed.source[:1024] + parsed.source[-1024:]))


def _order(verdict):
    at = verdict.site.position()
    return (verdict.site.inner_fn.script.rel, at.start.line if at else 0, -int(verdict.severity))


def _finding(sub, result, v, turned_on=(), also=()):
    """The finding of verdict `v`; `also`: verdicts of the same cause at other places, whose lines
    join the evidence."""
    script = v.site.inner_fn.script
    at = v.site.position()
    line = at.start.line if at else None
    words = WORDS[v.rule][v.kind]
    # what makes it so (where the key took the target, the call that passed validation data in),
    # when the analysis found it and the rule has words for it, is the place the finding names
    made = v.origin.position() if v.origin is not None and words.origin else None
    named_script = v.origin.inner_fn.script if made is not None else script
    named = made or at
    here = "" if script is named_script else f"{script.rel}:"
    other_line = None
    evidence = [excerpt(script, at, here)] if at else []
    more = sorted({a.start.line: a for a in (u.site.position() for u in also) if a is not None
                   and a.start.line != line}.items())
    evidence += [excerpt(script, a, here) for _, a in more]
    if made is not None and (here or made.start.line != line):
        evidence.insert(0, excerpt(named_script, made))
    if v.other is not None:
        other_script = v.other.inner_fn.script
        other_at = v.other.position()
        if other_at is not None:
            other_line = other_at.start.line
            where = "" if other_script is named_script else f"{other_script.rel}:"
            evidence.append(excerpt(other_script, other_at, where))
    call_at = v.site.call_position()
    if call_at is not None and call_at.start.line not in (line, made and made.start.line):
        evidence.append(f"(reached through the call at line {call_at.start.line})")
    message = words.message.format(at=f"line {line}", other=f"line {other_line}", detail=v.detail)
    if more:
        message += f" (the same at line{'s' if len(more) > 1 else ''} {', '.join(str(n) for n, _ in more)})"
    if made is not None:
        origin = f"{named_script.rel}:{made.start.line}" if here else f"line {made.start.line}"
        message += f" ({words.origin.format(origin=origin)})"
    message += _notes(v)
    if turned_on:
        message += f" (the run turned it on: {'; '.join(turned_on)})"
    if v.not_run:
        message += f" (not run: the runs changed the setting it needs, {'; '.join(v.not_run)})"
    source = ROWS[v.rule].primary_source + (f"; contested, see {words.link}" if words.link else "")
    shipped = sub.scripts.get(named_script.rel)
    place = named.start if named else None
    return found(v.rule, message, severity=v.severity, file=named_script.rel, line=place and place.line,
                 column=place and place.column, evidence="\n".join(evidence),
                 hint=words.hint, via=shipped.via(place.line) if shipped is not None and place else None,
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


def excerpt(script, at, where: str = "") -> str:
    """The lines of a node, each with its number (`71: opt.step()`)."""
    lines = script.excerpt(at.start.line, at.end.line).split("\n")
    return "\n".join(f"{where}{at.start.line + i}: {text}" if text != "..." else text
                     for i, text in enumerate(lines))
