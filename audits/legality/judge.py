"""Turn the events a function's summary holds into verdicts: rule, severity, the place, and which
of the rule's readings applies (its `kind`). Which events make a rule's finding is the rule's own
knowledge: each module of audits/rules/legality registers a `Recognizer` (its readings of one
event, and how its verdicts weigh where the run does not plainly reach them); this module runs
every registered one and weighs what holds for all of them.

Events carry what their data rests on; a rule fires only where that data is validation tokens
(after the callers' arguments were substituted), so a helper that trains and scores training
batches is never blamed. A verdict from code the entry point never reaches is INFO.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from audits.findings import Severity
from audits.legality.values import Event, Site, at_default, is_update, non_default

FAIL, WARN, INFO = Severity.FAIL, Severity.WARN, Severity.INFO


@dataclasses.dataclass(frozen=True)
class Verdict:
    rule: str
    kind: str  # which of the rule's readings: the key of its words
    severity: Severity
    site: Site
    other: Site | None = None  # the second operation it is judged against
    detail: str = ""  # what the reading names (the call, the serializer)
    settings: tuple[str, ...] = ()  # it runs only when these settings are not their defaults
    ungated: Severity | None = None  # the severity it has when those settings are as the run set them
    defaults: tuple[tuple[str, bool], ...] = ()  # settings it needs as they are by default: (NAME, on)
    not_run: tuple[str, ...] = ()  # where the runs changed one of those settings
    origin: Site | None = None  # what makes it so (the key hashed from the target, the call passing val data)
    side_script: bool = False  # in a script the entry point does not run
    unreachable: bool = False  # in code the entry point never reaches
    open: bool = False  # its rule waits for the callers (a mask passed in, statistics returned)
    # The settings the operation it reads runs under, beside the event's ("if:NAME:needed:default"):
    # a pick made in a branch a setting turns on, whose value the event then scores.
    switches: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class Facts:
    """What a rule may weigh beside one event: the updates of its function found scored before
    (order.judge marks them resolved), by the identity of their node."""
    resolved: frozenset[int]


@dataclasses.dataclass(frozen=True)
class Recognizer:
    """A legality rule as the analysis runs it; its module registers one (`recognizer`)."""
    rule: str
    read: Callable[[Event, Facts], list[Verdict]]  # its verdicts on one event (none for most)
    # Its evidence is the code's own shape: in unreachable code still worth a note. Other rules
    # turn on which data a value holds, which only the run's call chain decides.
    shape: bool = False
    # It judges the order of training and scoring: its legal note is void at a statement where
    # another such rule fails (an update scored first by a diagnostic pass, but rescored after).
    order: bool = False
    side_script: Severity = WARN  # the most it weighs in a script the entry point does not run
    placed: frozenset[str] = frozenset()  # its readings of a helper's pass that a caller placed anew
    # Its verdict once the run's evaluation is known to keep documents apart (the name of what
    # does: varlen attention, a document mask) or not (None).
    isolation: Callable[[Verdict, str | None], Verdict] | None = None
    # Whether its reading of an event turns on what the callers do (pass a mask as an argument,
    # use statistics the callee returns): where a caller's view, with that known, reads the
    # operation, it replaces such a reading of the callee's own view.
    by_callers: Callable[[Event], bool] | None = None


RECOGNIZERS: dict[str, Recognizer] = {}


def recognizer(rule: str, read: Callable[[Event, Facts], list[Verdict]], **facts) -> Recognizer:
    """Register `rule`'s recognizer; the analysis runs them in the order they were registered."""
    if rule in RECOGNIZERS:
        raise ValueError(f"rule {rule} has a recognizer already")
    RECOGNIZERS[rule] = found = Recognizer(rule, read, **facts)
    return found


def verdicts(events: list[Event], reachable: bool, hypothetical: bool = False,
             side_script: bool = False) -> list[Verdict]:
    """Verdicts on one root's events. `hypothetical`: the root is unreachable code whose
    parameters are read as validation data, to show what it would do if it ran. `side_script`:
    it runs from another script in the folder (a data or artifact builder the author ran by
    hand): each rule's verdict weighs at most its `side_script` there."""
    if not RECOGNIZERS:
        raise RuntimeError("no legality rule is registered: import audits.catalogue before the analysis")
    facts = Facts(frozenset(id(e.site.inner) for e in events if is_update(e) and "resolved" in e.flags))
    out: list[Verdict] = []
    for event in events:
        found = [v for rule in RECOGNIZERS.values() for v in rule.read(event, facts)]
        found = [dataclasses.replace(v, open=True) if _waits(v.rule, event) else v for v in found]
        out += [_weighed(v, event) for v in found]
    if side_script:
        out = [dataclasses.replace(v, severity=min(v.severity, RECOGNIZERS[v.rule].side_script),
                                   side_script=True)
               for v in out]
    if not reachable:
        out = [dataclasses.replace(v, severity=INFO, unreachable=True)
               for v in out if not hypothetical or (v.severity > INFO and RECOGNIZERS[v.rule].shape)]
    return out


def _weighed(v: Verdict, event: Event) -> Verdict:
    """A verdict as the settings its code runs under weigh it: the event's and the operation's."""
    if v.switches:
        event = dataclasses.replace(event, flags=event.flags | v.switches)
    settings = non_default(event)
    defaults = tuple(at_default(event.flags))
    if defaults:
        v = dataclasses.replace(v, defaults=defaults)
    if settings:  # not run with the default settings: a reviewer asks whether it was on
        v = dataclasses.replace(v, severity=min(v.severity, WARN), settings=tuple(settings), ungated=v.severity)
    return v


def _waits(rule: str, event: Event) -> bool:
    """Does the rule's reading of the event wait for what the callers do?"""
    waits = RECOGNIZERS[rule].by_callers
    return waits is not None and waits(event)


def first_line(site: Site) -> tuple:
    """Where a site starts, to order sites by: (script, line)."""
    at = site.position()
    return (site.inner_fn.script.rel, at.start.line if at else 0)
