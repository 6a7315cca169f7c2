"""Turn the events a function's summary holds into verdicts: rule, severity, the place, and which
of the rule's readings applies (its `kind`); the words for each reading live with the rule, in
audits/rules/legality.

Events carry what their data rests on; a rule fires only where that data is validation tokens
(after the callers' arguments were substituted), so a helper that trains and scores training
batches is never blamed. A verdict from code the entry point never reaches is INFO.
"""

from __future__ import annotations

import dataclasses

from audits.findings import Severity
from audits.legality import operators
from audits.legality.values import (
    GEN, TARGET, TRAIN, VAL, Event, Site, Taint, is_score, is_update, kinds, non_default,
)

FAIL, WARN, INFO = Severity.FAIL, Severity.WARN, Severity.INFO
# Rules whose evidence is the code's own shape: in unreachable code they are still worth a note.
# The others turn on which data a value holds, which only the run's call chain decides.
SHAPE_RULES = {"TTT_SCORE_AFTER_ADAPT", "SLOT", "ETLB", "NGRAM_TARGET_IN_KEY", "NGRAM_NOT_NORMALIZED",
               "TWO_PASS_RESCORE", "BYTE_MIXTURE_NOT_NORMALIZED", "REALIZED_TOKEN_GATE",
               "BOS_CROSS_DOC_LEAK", "BPB_BYTE_ACCOUNTING"}


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
    origin: Site | None = None  # what makes it so (the key hashed from the target, the call passing val data)
    side_script: bool = False  # in a script the entry point does not run
    unreachable: bool = False  # in code the entry point never reaches


def verdicts(events: list[Event], reachable: bool, hypothetical: bool = False,
             side_script: bool = False) -> list[Verdict]:
    """Verdicts on one root's events. `hypothetical`: the root is unreachable code whose
    parameters are read as validation data, to show what it would do if it ran. `side_script`:
    it runs from another script in the folder (a data or artifact builder the author ran by
    hand): a warning at most, and downloads there are expected (INFO)."""
    resolved = {id(e.site.inner) for e in events if is_update(e) and "resolved" in e.flags}
    out: list[Verdict] = []
    for event in events:
        found = _event(event, resolved)
        settings = non_default(event)
        if settings:  # not run with the default settings: a reviewer asks whether it was on
            found = [dataclasses.replace(v, severity=min(v.severity, WARN), settings=tuple(settings),
                                         ungated=v.severity) for v in found]
        out += found
    if side_script:
        out = [dataclasses.replace(v, severity=INFO if v.rule == "NETWORK_AT_EVAL" else min(v.severity, WARN),
                                   side_script=True)
               for v in out]
    if not reachable:
        out = [dataclasses.replace(v, severity=INFO, unreachable=True)
               for v in out if not hypothetical or (v.severity > INFO and v.rule in SHAPE_RULES)]
    return out


def _val(taint: Taint) -> bool:
    return VAL in taint


def _event(e: Event, resolved: set[int]) -> list[Verdict]:
    kind = e.kind
    if kind == "judgment":
        return _judgment(e, resolved)
    if is_update(e):
        return _update(e)
    if is_score(e) and _val(e.taint):
        return _score(e)
    if kind == "lookup" and _val(e.taint):
        return _lookup(e)
    if kind == "calib":
        return _calib(e)
    if kind == "stored" and operators.is_stored(e.taint) and _val(e.state):
        unpacked = sorted((label[1] for label in kinds(e.taint, "unpacked")), key=_line)
        return [Verdict("PAID_PREFIX", "answers_read", FAIL, e.site, origin=unpacked[0] if unpacked else None)]
    if kind == "sink" and _val(e.taint) and operators.written_data(e.taint):
        return [Verdict("PAID_PREFIX", "saved", FAIL, e.site, detail=e.detail)]
    if kind == "net":
        return [Verdict("NETWORK_AT_EVAL", "before_scoring", WARN, e.site, detail=e.detail)]
    if kind == "mix":
        return _mix(e)
    if kind == "ratio" and _val(e.taint):
        return [Verdict("BPB_BYTE_ACCOUNTING", "fixed_ratio", WARN, e.site)]
    if kind == "pieces":
        return _pieces(e)
    if kind == "array_file":  # the rule weighs it against the folder's shipped array files
        return [Verdict("BPB_BYTE_ACCOUNTING", "array_file", INFO, e.site, detail=e.detail)]
    if kind == "tilt" and _val(e.taint):
        return _tilt(e)
    if kind == "smoothing" and _val(e.taint):
        return [Verdict("NGRAM_NOT_NORMALIZED", "add_k", FAIL, e.site)]
    return []


def _judgment(e: Event, resolved: set[int]) -> list[Verdict]:
    rule = e.detail
    if rule == "TRAIN_DATA_AT_EVAL":
        # An adaptation on the scored tokens that also trains on training data. A training step on
        # training data alone, between periodic validation passes, is the baseline's schedule.
        if not (TRAIN in e.taint and _val(e.taint) and _val(e.state)):
            return []
        return [Verdict(rule, "trains_while_scoring", FAIL, e.site, e.other)]
    if not (_val(e.taint) and _val(e.state)):
        return []  # the update trained on, and the score scored, validation data
    if rule == "MULTI_EPOCH":
        if id(e.site.inner) not in resolved:
            return []
        return [Verdict("TTT_SCORE_AFTER_ADAPT", "multi_epoch", WARN, e.site)]
    if rule == "PREQUANT_TTT_ON_VAL":
        return [Verdict(rule, "trained_then_scored", FAIL, e.site, e.other, origin=e.opening)]
    if rule == "TTT_SCORE_AFTER_ADAPT":
        kind = ("rescored_after_pass" if "rescored" in e.flags else "adapt_pass" if "pass" in e.flags
                else "scored_again" if "again" in e.flags else "adapt_then_score")
        return [Verdict(rule, kind, FAIL, e.site, e.other, origin=e.opening if kind == "adapt_pass" else None)]
    if rule in ("SLOT", "ETLB"):
        if "context_only" in e.flags:
            return [Verdict(rule, "context_only", WARN, e.site, e.other)]
        return [Verdict(rule, "own_targets", FAIL, e.site, e.other)]
    if rule == "TWO_PASS_RESCORE":
        kind = "rescored_after_adapt" if "pass" in e.flags else "second_pass"
        return [Verdict(rule, kind, FAIL, e.site, e.other)]
    if rule == "VAL_DATA_IN_TRAINING":
        kind = "prebuilt_table" if "prebuilt" in e.flags else "trained_before_scored"
        return [Verdict(rule, kind, FAIL, e.site, e.other)]
    if rule == "NETWORK_AT_EVAL":
        return [Verdict(rule, "while_scoring", FAIL, e.site, e.other)]
    return []


def _update(e: Event) -> list[Verdict]:
    if not _val(e.taint) or "broken" in e.flags:
        return []  # (an update found to break the order is no legal note, whatever came before it)
    if "resolved" in e.flags:
        if _tensor_only(e.state):
            return [Verdict("ETLB", "scored_before", INFO, e.site, e.other)]
        return [Verdict("TTT_SCORE_AFTER_ADAPT", "score_first", INFO, e.site, e.other)]
    if "judged" in e.flags or "passed" in e.flags:
        return []
    if TRAIN not in e.taint and "dropped" in e.flags:
        return [Verdict("VAL_DATA_IN_TRAINING", "thrown_away", WARN, e.site)]
    kind = "mixed_into_training" if TRAIN in e.taint else "never_scored"
    return [Verdict("VAL_DATA_IN_TRAINING", kind, FAIL, e.site)]


def _tensor_only(state: Taint) -> bool:
    """The update changes tensors made for it (a bias), not model or adapter parameters."""
    made = [label[2] for label in state if label[0] == "state"]
    return bool(made) and all(kind == "tensor" for kind in made)


def _score(e: Event) -> list[Verdict]:
    """What reached a score of validation tokens: a gate read from the scored token (a table
    lookup always counts; a comparison only where it weighted a probability, since a padding mask
    on the NLL is a comparison too), its bytes, a pick between losses, training data."""
    out = []
    byte_mixture = kinds(e.taint, "bytes")
    gates = {label[1] for label in kinds(e.taint, "gated")}
    gates |= {label[1] for label in kinds(e.taint, "gate") if label[2] == "lookup"}
    for site in sorted(gates, key=lambda s: s.path) if not byte_mixture else ():
        out.append(Verdict("REALIZED_TOKEN_GATE", "gate_reads_target", FAIL, site, e.site))
    for label in byte_mixture:
        out.append(Verdict("BYTE_MIXTURE_NOT_NORMALIZED", "own_bytes", FAIL, label[1], e.site))
    for label in kinds(e.taint, "select"):
        out.append(Verdict("TWO_PASS_RESCORE", "better_of_two", FAIL, label[1], e.site))
    if TRAIN in e.taint:
        out.append(Verdict("TRAIN_DATA_AT_EVAL", "in_score", FAIL, e.site))
    return out


def _lookup(e: Event) -> list[Verdict]:
    if TARGET in e.taint:
        made = sorted((label[1] for label in kinds(e.taint, "keyed")), key=_line)
        return [Verdict("NGRAM_TARGET_IN_KEY", "target_in_key", FAIL, e.site, origin=made[0] if made else None)]
    if "module" in e.flags:
        return []
    return [Verdict("NGRAM_TARGET_IN_KEY", "context_key", INFO, e.site)]


def _line(site: Site) -> tuple:
    at = site.position()
    return (site.inner_fn.script.rel, at.start.line if at else 0)


def _calib(e: Event) -> list[Verdict]:
    if _val(e.taint):
        return [Verdict("GPTQ_CALIB_ON_VAL", "on_validation", FAIL, e.site, origin=e.entered)]
    if TRAIN in e.taint:
        return [Verdict("GPTQ_CALIB_ON_VAL", "on_training", INFO, e.site)]
    if GEN in e.taint:
        return [Verdict("GPTQ_CALIB_ON_VAL", "on_generated", INFO, e.site)]
    return []


def _mix(e: Event) -> list[Verdict]:
    kind = "masked" if "masked" in e.flags else "unmasked"
    return [Verdict("BOS_CROSS_DOC_LEAK", kind, INFO if kind == "masked" else FAIL, e.site)]


def _pieces(e: Event) -> list[Verdict]:
    if "space_twice" in e.flags:
        return [Verdict("BPB_BYTE_ACCOUNTING", "space_twice", FAIL, e.site)]
    fallback, space = "byte_fallback" in e.flags, "leading_space" in e.flags
    if fallback and space:
        return [Verdict("BPB_BYTE_ACCOUNTING", "pieces", INFO, e.site)]
    kind = "no_byte_fallback" if space else "no_leading_space" if fallback else "no_fallback_no_space"
    return [Verdict("BPB_BYTE_ACCOUNTING", kind, WARN, e.site)]


def _tilt(e: Event) -> list[Verdict]:
    if "normalized" in e.flags:
        return [Verdict("NGRAM_NOT_NORMALIZED", "renormalized", INFO, e.site)]
    return [Verdict("NGRAM_NOT_NORMALIZED", "not_renormalized", FAIL, e.site)]
