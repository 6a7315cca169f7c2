"""Legality analysis of a submission's code: parse every shipped script once, interpret it
statically from the entry point, and judge what it does to validation data (the #1017
conditions, the README's data rules). The rules in audits/rules/legality read the verdicts.

    analyse(sub) -> Result      cached per set of sources: every rule's check shares one run
"""

from __future__ import annotations

import dataclasses
import functools
import re

from audits.findings import Severity
from audits.legality import isolation, judge, program
from audits.legality.interp import Analysis
from audits.legality.judge import Verdict
from audits.legality.parse import ParsedScript, parse
from audits.legality.values import VAL, Event, at_default
from audits.submission import runsettings

ENTRY = "train_gpt.py"
# Characters of scripts the run does not import (ablations, helpers run by hand) read on top of the
# run's own: sixty ablation copies of a 130 KB script took minutes and show warnings at most.
SIDE_BUDGET = 1_000_000
# the indent before the statement within its line (`^\s*` ran on over blank lines from each one)
_IMPORT = re.compile(r"(?m)^[^\S\n]*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))")


@dataclasses.dataclass
class Result:
    scripts: dict[str, ParsedScript]
    verdicts: list[Verdict]
    unparsed: dict[str, str]  # shipped scripts not parsed -> why
    entry: tuple[str, ...]
    run: tuple[str, ...] = ()  # the entry scripts and the sibling scripts they import
    skipped: tuple[str, ...] = ()  # scripts the run does not import, left out over SIDE_BUDGET
    # what the scripts print: (pattern, its longest literal, the settings it is printed under)
    prints: tuple[tuple[str, str, frozenset], ...] = ()

    def of(self, rule: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.rule == rule]


def analyse(sub) -> Result:
    sources = sorted((rel, script.source) for rel, script in sub.scripts.items()
                     if script.source is not None)
    launched = runsettings.launched(sub)
    kept, skipped = within_budget(sources, launched)
    result = analyse_sources(tuple(kept), launched)
    return dataclasses.replace(result, skipped=tuple(skipped)) if skipped else result


def within_budget(sources: list[tuple[str, str]], launched: tuple[str, ...] = ()) -> tuple[list, list[str]]:
    """The scripts to analyse: the run's own (the entry, what it imports or names, transitively,
    read from the text before any parse), then the others in path order up to SIDE_BUDGET
    characters; and the rest, left out."""
    by_rel = dict(sources)
    run = set(_entries(by_rel, launched))
    todo = list(run)
    while todo:
        text = by_rel[todo.pop()]
        named = {m.replace(".", "/") for pair in _IMPORT.findall(text) for m in pair if m}
        for rel in by_rel:
            stem = rel[:-3] if rel.endswith(".py") else rel
            stem = stem[:-len("/__init__")] if stem.endswith("/__init__") else stem
            if rel not in run and (stem in named or stem.rsplit("/", 1)[-1] in text):
                run.add(rel)
                todo.append(rel)
    kept, skipped, spent = [], [], 0
    for rel, source in sources:
        if rel not in run:
            spent += len(source)
            if spent > SIDE_BUDGET:
                skipped.append(rel)
                continue
        kept.append((rel, source))
    return kept, skipped


def not_checked(skipped: list[str] | tuple[str, ...]) -> str:
    """The finding's words for the scripts within_budget left out."""
    names = ", ".join(skipped[:3]) + (", ..." if len(skipped) > 3 else "")
    return (f"{len(skipped)} scripts the run does not import were not checked ({names}): past the "
            f"{SIDE_BUDGET:,} characters of such scripts the audit reads")


@functools.lru_cache(maxsize=4)
def analyse_sources(sources: tuple[tuple[str, str], ...], launched: tuple[str, ...] = ()) -> Result:
    parsed, unparsed = {}, {}
    for rel, source in sources:
        script = parse(rel, source)
        if isinstance(script, str):
            unparsed[rel] = script
        else:
            parsed[rel] = script
    entry = _entries(parsed, launched)
    prog = program.build(parsed)
    analysis = Analysis(prog)
    run = _imported(prog, entry)
    for rel in sorted(parsed, key=lambda r: (r in entry, r)):  # imported scripts first
        analysis.summary(prog.roots[rel])
    reached = _reachable(prog, analysis, [prog.roots[rel] for rel in run])
    verdicts: list[Verdict] = []
    side = _reachable(prog, analysis, [prog.roots[rel] for rel in parsed if rel not in run]) - reached
    guards = _guards(prog, analysis, list(prog.roots.values()))
    tests = _guards(prog, analysis, list(prog.roots.values()), field="tests")
    functions = [*prog.roots.values(), *prog.all_functions]
    # a helper's pass that a caller placed after its export or training (order._placed)
    placed = {e.site.statement for fn in functions for e in analysis.summary(fn).events if e.kind == "placed"}
    for fn in functions:
        events = analysis.summary(fn).events
        if guards.get(fn.key):  # it runs only under these settings: so does what it finds itself
            events = [dataclasses.replace(e, flags=e.flags | guards[fn.key]) for e in events]
        if fn.key in reached:
            verdicts += _needing(judge.verdicts(events, reachable=True), tests.get(fn.key))
        elif fn.key in side:
            verdicts += judge.verdicts(events, reachable=True, side_script=True)
        else:
            events = [_as_if_validation(e) for e in events]
            verdicts += judge.verdicts(events, reachable=False, hypothetical=True)
    verdicts = [v for v in verdicts if not (v.site.statement in placed and _replaced_by_placing(v))]
    verdicts = _follow_isolation(_by_callers(verdicts), [parsed[rel] for rel in run])
    return Result(parsed, _dedupe(verdicts), unparsed, entry, tuple(sorted(run)),
                  prints=_prints(analysis, functions, reached, guards))


def _prints(analysis: Analysis, functions, reached: set[str], guards: dict[str, frozenset]) -> tuple:
    """Every print with the settings turned on that running it takes: its own tests and every
    path to its function. A print the run was not seen to reach is taken to need nothing, so
    that its lines speak for no setting."""
    out = []
    for fn in functions:
        for regex, anchor, flags in analysis.summary(fn).prints:
            needs = frozenset(f for f in flags | guards.get(fn.key, frozenset()) if f.endswith(":1:0"))
            out.append((regex, anchor, needs if fn.key in reached else frozenset()))
    return tuple(out)


def _by_callers(verdicts: list[Verdict]) -> list[Verdict]:
    """For a rule whose reading turns on what callers pass, a callee's own view of an operation
    (its parameters unknown) gives way where a caller in the run read it with the arguments known."""
    known = {(v.rule, v.site.statement) for v in verdicts
             if not v.open and not v.unreachable and not v.side_script}
    return [v for v in verdicts if not (v.open and (v.rule, v.site.statement) in known)]


def _replaced_by_placing(v: Verdict) -> bool:
    """What the helper said of a pass its caller placed (each rule names those readings)."""
    return v.kind in judge.RECOGNIZERS[v.rule].placed


def _follow_isolation(verdicts: list[Verdict], run) -> list[Verdict]:
    """Each verdict as its rule reads it once it is known whether the run's evaluation keeps
    documents apart (varlen or per-document attention), and by what."""
    name = isolation.found(run)
    out = []
    for v in verdicts:
        follow = judge.RECOGNIZERS[v.rule].isolation
        out.append(follow(v, name) if follow is not None else v)
    return out


def _entries(parsed: dict, launched: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The scripts the run starts from: train_gpt.py and the scripts the runs were seen to start
    (`launched`: a log embeds their source, a launch or README command starts them); without
    either, every top-level script."""
    entry = tuple(dict.fromkeys(rel for rel in (ENTRY, *launched) if rel in parsed))
    return entry or tuple(rel for rel in parsed if "/" not in rel)


def _imported(prog: program.Program, entry: tuple[str, ...]) -> set[str]:
    """Entry scripts and the sibling scripts they import, transitively."""
    run, todo = set(entry), list(entry)
    while todo:
        rel = todo.pop()
        for name in prog.aliases[rel]:
            other = prog.sibling(rel, name)
            if other is not None and other not in run:
                run.add(other)
                todo.append(other)
    return run


def _reachable(prog: program.Program, analysis: Analysis, roots) -> set[str]:
    """Functions the run reaches: called or passed as values, and every method of a class it
    instantiates (torch calls forward, hooks, __call__ for it)."""
    reached, todo = set(), list(roots)
    while todo:
        fn = todo.pop()
        if fn.key in reached:
            continue
        reached.add(fn.key)
        summary = analysis.summary(fn)
        todo += [prog.by_key[key] for key in summary.reaches if key in prog.by_key]
        for cls in summary.classes:
            info = prog.classes.get(cls)
            if info is not None:
                todo += info.methods.values()
    return reached


def _needing(verdicts: list[Verdict], tests: frozenset | None) -> list[Verdict]:
    """Verdicts of a function every call of which needs these settings as they are by default
    (`if h.ttt_enabled:`, on by default): they need them too."""
    if not tests:
        return verdicts
    needs = tuple(at_default(tests))
    return [dataclasses.replace(v, defaults=tuple(dict.fromkeys(v.defaults + needs))) for v in verdicts]


def _guards(prog: program.Program, analysis: Analysis, roots, field: str = "guards") -> dict[str, frozenset]:
    """Per function reached from `roots`: the settings tests every path to it passes (a function
    called only under `if h.slot_enabled:` runs only when SLOT_ENABLED is set, also where it reads
    validation data itself); `field`: the summaries' settings tests kept (those turning a setting
    on, or all of them)."""
    guard = {fn.key: frozenset() for fn in roots}
    todo = list(roots)
    while todo:
        fn = todo.pop()
        summary = analysis.summary(fn)
        reached = dict(getattr(summary, field))
        for cls in summary.classes:  # methods torch calls on an object made here
            info = prog.classes.get(cls)
            for method in info.methods.values() if info is not None else ():
                reached.setdefault(method.key, frozenset())
        for key, flags in reached.items():
            if key not in prog.by_key:
                continue
            path = guard[fn.key] | flags
            new = guard[key] & path if key in guard else path
            if guard.get(key) != new:
                guard[key] = new
                todo.append(prog.by_key[key])
    return guard


def _as_if_validation(event: Event) -> Event:
    """An event of unreachable code with its parameters read as validation data."""
    def swap(taint):
        return frozenset(VAL if label[0] == "param" else label for label in taint)
    return dataclasses.replace(event, taint=swap(event.taint), state=swap(event.state))


def _dedupe(verdicts: list[Verdict]) -> list[Verdict]:
    """One verdict per rule and statement, the most severe. Where a rule FAILs at a statement,
    nothing milder of that rule is kept there; a warning keeps its legal note (score-first, but
    multi-epoch: both are worth reading). Places are statements, not lines, so that no line
    numbers are needed here (they cost a pass over the source)."""
    verdicts = _best(verdicts, lambda v: v.site.statement)
    worst_at: dict[tuple, Severity] = {}
    for v in verdicts:
        place = (_family(v.rule), v.site.statement)
        worst_at[place] = max(worst_at.get(place, Severity.INFO), v.severity)
    return [v for v in verdicts
            if v.severity == Severity.FAIL or worst_at[(_family(v.rule), v.site.statement)] < Severity.FAIL]


def _family(rule: str) -> str:
    """Rules about the order of training and scoring are one family: a legal note of one of them
    is void where another fails (an update scored before by a diagnostic pass, but rescored after)."""
    return "order" if judge.RECOGNIZERS[rule].order else rule


def _best(verdicts: list[Verdict], place) -> list[Verdict]:
    """The most severe verdict per rule and place (one finding per update, whichever score it
    was paired with), seen from the function nearest to it (the shortest call chain reads best);
    a legal note (INFO) is kept apart."""
    best: dict[tuple, Verdict] = {}
    for v in verdicts:
        key = (v.rule, v.severity == Severity.INFO, place(v))
        if key not in best or _better(v, best[key]):
            best[key] = v
    return list(best.values())


def _better(v: Verdict, than: Verdict) -> bool:
    """More severe, else a shorter call chain, else (so that a choice between equals never
    depends on the order sets were iterated in) the earlier statement and second operation."""
    rank, other_rank = (v.severity, -len(v.site.chain)), (than.severity, -len(than.site.chain))
    if rank != other_rank:
        return rank > other_rank
    return _where(v) < _where(than)


def _where(v: Verdict) -> tuple:
    return (v.site.statement, v.other.statement if v.other is not None else ("", ()))
