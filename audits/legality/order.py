"""Score before update (#1017 C3): in the function whose statements hold both, is a score of some
tokens fixed before any update that trained on them, and never taken again after?

Judged from the statement order and the loop structure of one function, on events recorded by the
interpreter (its own, and its callees' replayed at their call sites):
  - a score S and an update U on overlapping data in the same iteration: S first is the legal
    score-first order; U first adapts before scoring;
  - across iterations of a loop that holds both: if either side sees the same data every
    iteration (no label of that loop), U's tokens are scored again after it;
  - U on the previous iteration's data only (carried round the loop) was scored there;
  - an update repeated by a loop on unchanged data is a multi-epoch pass (contested, a warning).
What was updated is part of what is found: parameters made inside the loop for one window, a
tensor made outside it and added to logits, or model or adapter parameters. Each finding is
recorded as a judgment event (its `detail` one of the names below) with the data it rests on; the
rules (audits/rules/legality) decide which of them make their findings, where that data turns out
to be validation tokens.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from audits.legality import apis
from audits.legality.program import compound_blocks
from audits.legality.values import (
    GEN, MODEL, TRAIN, Event, Site, Taint, data_roots, exclusive, is_score, is_update, kinds, switches,
)

# What a judgment found, on tokens that are scored (the `detail` of its event):
WINDOW_FIT = "window_fit"  # parameters made for each window, fitted on it before it is scored
KEPT_TENSOR_FIT = "kept_tensor_fit"  # a tensor kept across windows, fitted on tokens before they are scored
ADAPTED_FIRST = "adapted_first"  # model or adapter parameters trained on tokens before they are scored
FINE_TUNED_AFTER_TRAINING = "fine_tuned_after_training"  # a pass of its own on them, after training
TRAINED_BEFORE_SCORED = "trained_before_scored"  # a pass of its own on them (or a table filled from them)
MIXED_WITH_OTHER_DATA = "mixed_with_other_data"  # an adaptation on them that also reads other data
SCORED_TWICE = "scored_twice"  # scored again after a pass that scored (or filled a table from) them
REPEATED_PASS = "repeated_pass"  # an update repeated on the same tokens, no score between
NETWORK_WHILE_SCORING = "network_while_scoring"  # a network call once scoring has started


def _passes(taint: Taint) -> list:
    """The forward passes and losses a value comes from."""
    return [label for label in taint if label[0] in ("loss", "out")]


# A branch of an `if` that leaves the function (ends in return, raise or sys.exit) has a block
# number below this: what it runs is never followed by the statements after that `if`.
TERMINAL = -100


def relation(a: Site, b: Site) -> str:
    """Where `a` runs relative to `b` within one pass through their common statements:
    before, after, exclusive (different branches of an if, or a branch that returns and what
    follows the if), or same (one statement)."""
    for n, (x, y) in enumerate(zip(a.path, b.path)):
        if x == y:
            continue
        (block_a, i_a), (block_b, i_b) = x, y
        if block_a == block_b:
            first = a if i_a < i_b else b
            if len(first.path) > n + 1 and first.path[n + 1][0] <= TERMINAL:
                return "exclusive"
            return "before" if i_a < i_b else "after"
        if block_a < 0 and block_b < 0:
            return "exclusive"
        return "before" if block_a < block_b else "after"
    return "same"


def common_loops(a: Site, b: Site) -> tuple:
    out = []
    for x, y in zip(a.loops, b.loops):
        if x != y:
            break
        out.append(x)
    return tuple(out)


def later(fn, loop) -> str:
    """The flag of code that runs only after `loop`'s first iteration, in `fn` (`if epoch ==
    num_epochs - 1:`): what it scores there, a score-first pass in an earlier iteration has
    already trained on."""
    return f"later:{fn.key}:{loop}"


def varies(taint: Taint, loop) -> bool:
    """Does the data differ per iteration of `loop` (fresh or carried over)?"""
    return ("iter", loop) in taint or ("prev", loop) in taint


def previous_only(taint: Taint, loop) -> bool:
    return ("prev", loop) in taint and ("iter", loop) not in taint


def _identities(taint: Taint) -> set:
    """What identifies a model: a class defined in the script (its weights may reach a fresh
    instance through a file: save, quantize, load), or the very object of a library class."""
    out = set()
    for label in taint:
        if label[0] == "objref" and label[1][0] == "obj":
            site, cls = label[1][1], label[1][2]
            out.add(cls if ":" in cls else (cls, site))
    return out


def _same_model(update: Event, score: Event, events: list[Event]) -> bool:
    """Could the score use what the update changed? A tensor made for the update (a bias, a
    delta, an adapter) must appear in the score, unless the update also changes the very model
    that scores (adapters injected into it); objects made inside the call that updated them must
    have come out of it (see _kept_in_callee); a model must be the same one (see _identities).
    Unknown counts as the same."""
    if _kept_in_callee(update, score, events):
        return False
    updated, scored = _identities(update.state), _identities(score.taint)
    tensors = {label for label in update.state if label[0] == "state" and label[2] == "tensor"}
    if tensors and not updated & scored and not tensors & score.taint:
        return False
    return not updated or not scored or bool(updated & scored)


def _reloaded_since(update: Event, score: Event, events: list[Event]) -> bool:
    """Were the weights the score runs on all loaded afresh after the update (a strict
    load_state_dict of weights read back from the artifact), from weights written out before it?
    Then nothing it trained reaches this score. Weights written out after the update (the
    fine-tuned model quantized and exported, then loaded back to be scored) carry what it
    learned: an export between the two (or in the call that loads them back) keeps the pair."""
    models = _model_params(events)
    exports = [e.site for e in events if _exports(e, models) and relation(update.site, e.site) == "before"]
    return any(label[1].fn is update.site.fn and relation(update.site, label[1]) == "before"
               and not any(relation(site, label[1]) in ("before", "same") for site in exports)
               for label in kinds(score.taint, "reloaded"))


def _origin(site: Site) -> tuple:
    """Where an object was made, however many calls it has been seen through."""
    return site.inner_fn.key, id(site.inner)


def _objects(taint: Taint) -> set:
    """Where the objects that model calls ran on were made."""
    return {_origin(label[1][1]) for label in taint
            if label[0] == "objref" and label[1][0] == "obj" and label[1][1] is not None}


def _kept_in_callee(update: Event, score: Event, events: list[Event]) -> bool:
    """Did the update change only objects made inside the call it ran in (adapters a TTT function
    builds, trains and scores with), none of which reached the score? An object leaves its call
    returned, stored into an argument (`model.lora = lora`) or written to a file; the first two
    carry its label into every value that uses it, the third leaves a serialized value holding it."""
    made = set()
    for label in update.state:
        if label[0] == "objref":
            if label[1][0] != "obj" or label[1][1] is None or label[1][1].fn is update.site.fn:
                return False  # an object passed in, or made here: the scores here may hold it
            made.add(_origin(label[1][1]))
        elif label[0] == "state" and label[2] == "tensor":
            return False  # judged by the tensor rule of _same_model
    return bool(made) and not made & _held(score.taint) and not any(
        e.kind in ("export", "sink") and made & _held(e.taint) for e in events)


def _held(taint: Taint) -> set:
    """Where the objects a value holds, or model calls behind it ran on, were made."""
    return _objects(taint) | {_origin(label[1]) for label in taint
                              if label[0] == "obj" and label[1] is not None}


def _made_inside(state: Taint, loop) -> tuple[bool, bool]:
    """(made inside `loop`, is a plain tensor) for the state an update changed."""
    inside = tensor = False
    for label in state:
        if label[0] == "state" and label[2] == "tensor":
            tensor = True
            inside |= label[1] is not None and loop in label[1].loops
        elif label[0] == "objref" and label[1][0] == "obj":
            inside |= loop in label[1][1].loops
    return inside, tensor


def tensor_only(state: Taint) -> bool:
    """The update changes tensors made for it (a bias), not model or adapter parameters."""
    made = [label[2] for label in state if label[0] == "state"]
    return bool(made) and all(kind == "tensor" for kind in made)


def _spans(taint: Taint) -> set[tuple[str, str]]:
    return {(label[1], label[2]) for label in kinds(taint, "span")}


def _context_only(update: Event, score: Event) -> bool:
    """The update's loss covers positions that end where the scored ones start (issue #1336).
    Slices both took (the window cut from the stream, `y = chunk[1:]`) say nothing about which
    of its positions each covers: only the slices one of them took alone are compared."""
    fitted, scored = _spans(update.taint), _spans(score.taint)
    fitted, scored = fitted - scored, scored - fitted
    if not fitted or not scored:
        return False
    return all(hi in {lo for lo, _ in scored} for _, hi in fitted)


def _after_training(update: Event, events: list[Event]) -> bool:
    """Does a training update (on training data only) run before this one? Then this one is a
    fine-tune after training, not training itself."""
    return any(is_update(e) and ("train",) in e.taint and ("val",) not in e.taint
               and relation(e.site, update.site) == "before" for e in events)


def _after_export(update: Event, events: list[Event]) -> bool:
    """Is the model written out (the artifact) before this update? Then the update adapts the
    shipped model at evaluation time (after the quantization round trip), not before export."""
    models = _model_params(events)
    return any(_exports(e, models) and relation(e.site, update.site) == "before" for e in events)


def _model_params(events: list[Event]) -> set:
    """The parameters of this function that a model call ran on (`def evaluate(model, ...)`)."""
    return {label for e in events for taint in (e.taint, e.state) for label in taint
            if label[0] == "objref" and label[1][0] == "param"}


def _exports(event: Event, models: set) -> bool:
    """A model's weights serialized: an export, or a serializer given a parameter that turned
    out to be a model at this call site or that this function runs as one."""
    if event.kind == "export":
        return True
    return event.kind == "sink" and event.detail in apis.SERIALIZE_CALLS and any(
        label[0] in ("obj", "objref", "state") or ("objref", label) in models for label in event.taint)


def _evaluation_pass(update: Event, score: Event) -> list[Event]:
    """An adaptation pass over the tokens at evaluation time, scored after it (C3). Where the
    pass that adapted also scored them (score-first TTT), the later score is a second pass over
    the same tokens as well (C4). Both are placed at the calls in this function: at the pass
    where it trained on tokens not yet scored (its finding names where the pass begins), at the
    score after it where the pass was legal by itself and only that score breaks the order."""
    made, scored = _objects(update.state), _objects(score.taint)
    if made and scored and not made & scored:
        return []  # the score runs on another copy read back from the artifact, not the adapted one
    flags = frozenset({"pass"}) | switches(update, score)
    adapt, rescore = _here(update.site), _here(score.site)
    if "resolved" not in update.flags:
        return [Event("judgment", adapt, update.taint, score.taint, detail=ADAPTED_FIRST, other=rescore, flags=flags,
                      opening=_opening(update.site, score.site))] + _placing(update)
    return [Event("judgment", rescore, update.taint, score.taint, detail=ADAPTED_FIRST, other=adapt,
                  flags=flags | {"rescored"}),
            Event("judgment", rescore, update.taint, score.taint, detail=SCORED_TWICE, other=adapt, flags=flags)]


def _placing(update: Event) -> list[Event]:
    """A pass found in a helper and placed here, at its call: what the helper said of its update
    alone (validation tokens it reads from an object's field, never scored there) is replaced."""
    return [Event("placed", update.site)] if update.site.chain else []


def _here(site: Site) -> Site:
    """The statement of this function that runs `site` (the call, where it was reached through one)."""
    return Site(site.fn, site.node, site.path, site.loops)


def _opening(site: Site, score: Site) -> Site | None:
    """Where a pass of its own over the tokens begins, for a reader: the function called here
    that loops over the update itself (a `ttt_adapt(model, val_tokens, epochs)`), else the
    outermost statement of this function that holds the update but not the score after it (the
    `if epochs > 0:` opening a fine-tune written inline). None where that is the update itself."""
    if len(site.chain) == 1 and site.inner_fn.node is not None:
        callee = site.inner_fn
        if _holder(callee.script, callee.body, callee.script.position(site.inner), loops_only=True) is not None:
            return Site(site.fn, site.node, site.path, site.loops, inner=callee.node, inner_fn=callee)
    holder = _apart(site, score)
    if holder is None or not compound_blocks(holder):
        return None
    return Site(site.fn, site.node, site.path, site.loops, inner=holder)


def _apart(site: Site, other: Site):
    """The outermost statement of the function that holds `site` but not `other` (both seen from
    that function), or None."""
    script = site.fn.script
    at, other_at = script.position(site.node), script.position(other.node)
    if at is None or other_at is None:
        return None
    statements = site.fn.body
    while True:
        holder = _holder(script, statements, at)
        if holder is None or not _holds(script.position(holder), other_at):
            return holder
        statements = [s for block in compound_blocks(holder) for s in block]


def _second_pass(read: Site, first: Site) -> Site | None:
    """Where a second pass over the tokens begins, for a reader: the outermost statement of this
    function that holds the read of the table but not the first pass that filled it (the loop or
    `if` of the rescore, or the call that runs it). The read itself is often in a helper that both
    passes call, where it tells neither apart."""
    holder = _apart(read, first)
    return None if holder is None else Site(read.fn, read.node, read.path, read.loops, inner=holder)


def _holder(script, statements, at, loops_only: bool = False):
    """The statement among `statements` whose source holds the place `at`; with `loops_only`,
    the outermost loop, at any depth, that holds it."""
    for stmt in statements:
        if at is None or not _holds(script.position(stmt), at):
            continue
        if not loops_only or isinstance(stmt, (cst.For, cst.While)):
            return stmt
        return _holder(script, [s for block in compound_blocks(stmt) for s in block], at, loops_only)
    return None


def _holds(outer, inner) -> bool:
    return outer is not None and (outer.start.line, outer.start.column) <= (inner.start.line, inner.start.column) \
        and (inner.end.line, inner.end.column) <= (outer.end.line, outer.end.column)


def judge(fn, events: list[Event]) -> list[Event]:
    """`events` with updates marked resolved (scored before; `other` = that score) or judged,
    plus the verdicts."""
    scores = [e for e in events if is_score(e)]
    backpropagated = {label[1] for e in events if e.kind == "backward" for label in _passes(e.taint)}
    out, verdicts = [], []
    for event in events:
        if not is_update(event) or not data_roots(event.taint) or "judged" in event.flags:
            out.append(event)  # (an update already found to break the order is not re-judged)
            continue
        flags = set(event.flags)
        first, closest = event.other, None
        pairs = [(score, *_pair(event, score, backpropagated, events)) for score in scores]
        # a loss logged in a later epoch of the training on tokens that a fresh pass scored first,
        # in the same iteration of every loop that gives the update its tokens, is no score
        # (_pair's "kept_late")
        own = [loop for loop in event.site.loops if varies(event.taint, loop)]
        scored_first = any(resolved and not found and _fresh(score, backpropagated)
                           and all(loop in score.site.loops for loop in own)
                           for score, found, resolved in pairs)
        for score, found, resolved in pairs:
            if scored_first:
                found = [v for v in found if "kept_late" not in v.flags]
            if "passed" in event.flags:  # read so in a callee already: only a placement is new
                found = [v for v in found if v.detail != TRAINED_BEFORE_SCORED]
            if found:
                verdicts += found
                # a fine-tune found here with nothing trained or exported before it may still be
                # placed by a caller that knows (after training, or after export)
                flags.add("passed" if all(v.detail == TRAINED_BEFORE_SCORED for v in found) else "judged")
                if any(v.detail in (ADAPTED_FIRST, FINE_TUNED_AFTER_TRAINING, SCORED_TWICE) for v in found):
                    flags.add("broken")  # a score before it does not make it score-first
            if resolved:
                flags.add("resolved")
                nearness = (len(common_loops(score.site, event.site)), score.site.path)
                if closest is None or nearness > closest:
                    closest, first = nearness, score.site
        if "resolved" not in flags and _dropped(event, events):
            flags.add("dropped")
        repeated = _repeated_loop(event, scores)
        if repeated is not None:
            verdicts.append(Event("judgment", event.site, event.taint, event.taint,
                                  detail=REPEATED_PASS, flags=switches(event)))
        out.append(dataclasses.replace(event, flags=frozenset(flags), other=first))
    out, placed = _placed(out)
    everything = (out + verdicts + placed + _prebuilt(fn, events, scores)
                  + _network_after_scoring(events, scores))
    return list(dict.fromkeys(everything))  # one per distinct event (calls replay duplicates)


def _placed(events: list[Event]) -> tuple[list[Event], list[Event]]:
    """A helper that runs a pass over the tokens and scores them after it, with nothing exported
    or trained before the pass inside the helper, can only call it training before scoring. Where
    this function exported or trained before calling the helper, the pass is placed here as its
    own scores would be (_verdict), with a "placed" event naming the helper's finding it
    replaces (dropped from the verdicts by the caller of the analysis). (`events` with those
    findings marked, so that no caller places them again; the placements.)"""
    kept, out = [], []
    for found in events:
        if (found.kind != "judgment" or found.detail != TRAINED_BEFORE_SCORED or "prebuilt" in found.flags
                or "placed" in found.flags or not found.site.chain or found.other is None):
            kept.append(found)
            continue
        update = next((e for e in events if is_update(e) and e.site == found.site), None)
        score = next((e for e in events if is_score(e) and e.site == found.other), None)
        placed = [] if update is None or score is None else _verdict(update, score, (), "first", events)
        if placed and all(v.detail != TRAINED_BEFORE_SCORED for v in placed):
            out += placed + [Event("placed", found.site)]
            found = dataclasses.replace(found, flags=found.flags | {"placed"})
        kept.append(found)
    return kept, out


def _dropped(update: Event, events: list[Event]) -> bool:
    """Are the parameters this update trains deleted later in this function (`del lora, opt`)?
    Then what it learned is thrown away: a compile warm-up on a scratch adapter, not training
    that reaches the scored model."""
    trained = {label for label in update.state if label[0] == "state"}
    return bool(trained) and any(
        e.kind == "drop" and trained <= e.taint and relation(update.site, e.site) == "before"
        for e in events)


def _prebuilt(fn, events: list[Event], scores: list[Event]) -> list[Event]:
    """A table filled from the data in an earlier, separate pass, then read with hashed keys while
    scoring: every score sees statistics of tokens it has not reached yet (C1), and if that first
    pass scored too, the tokens are scored twice (C4)."""
    verdicts = []
    for lookup in (e for e in events if e.kind == "lookup"):
        # fills before the read, with data that may be validation tokens (a prefill from training
        # shards, or from tokens the model generated, is the legal home of a table)
        earlier = [label for label in kinds(lookup.state, "filled")
                   if label[1].fn is fn and relation(label[1], lookup.site) == "before"
                   and not common_loops(label[1], lookup.site) and label[3] - {TRAIN, GEN}]
        fills = [label[1] for label in earlier]
        if not fills:
            continue
        # one finding per read: the first fill (by where the call is, then where the fill is)
        fill = min(fills, key=lambda site: (site.path, site.statement))
        scored_there = bool(fill.loops) and any(fill.loops[-1] in s.site.loops for s in scores)
        if not scored_there and MODEL not in lookup.state and not kinds(lookup.state, "out"):
            # a first pass: one call that scored each chunk, then added it to the table (a table,
            # not a model's output computed in that pass, such as a hashed embedding of its input)
            passes = [site for site in fills
                      if site.chain and any(s.site.chain[:1] == site.chain[:1] for s in scores)]
            if passes:
                fill, scored_there = min(passes, key=lambda site: (site.path, site.statement)), True
        found = SCORED_TWICE if scored_there else TRAINED_BEFORE_SCORED
        # what the table was filled with there: the rules ask whether that is validation data
        written = frozenset().union(*(label[3] for label in earlier if label[1] == fill))
        verdicts.append(Event("judgment", fill, lookup.taint, written, detail=found,
                              other=lookup.site, flags=frozenset({"prebuilt"}) | switches(lookup),
                              opening=_second_pass(lookup.site, fill) if scored_there else None))
    return verdicts


def _network_after_scoring(events: list[Event], scores: list[Event]) -> list[Event]:
    """A network call made once scoring has started, or between scores."""
    verdicts = []
    for net in (e for e in events if e.kind == "net"):
        for score in scores:
            if exclusive(score, net):
                continue
            if relation(score.site, net.site) == "before" or common_loops(score.site, net.site):
                verdicts.append(Event("judgment", net.site, score.taint, score.taint,
                                      detail=NETWORK_WHILE_SCORING, other=score.site,
                                      flags=switches(net, score)))
                break
    return verdicts


def _pair(update: Event, score: Event, backpropagated: set, events: list[Event]) -> tuple[list[Event], bool]:
    """(verdicts, whether this score comes before the update on its tokens)."""
    if not data_roots(update.taint) & data_roots(score.taint) or exclusive(update, score):
        return [], False
    if score.site.node is update.site.node:  # both inside one call: judged in the callee, but
        return _called_again(update, score, _fresh(score, backpropagated)), False
    order = relation(score.site, update.site)
    if order in ("same", "exclusive"):
        return [], False
    loops = common_loops(score.site, update.site)
    if order == "after" and _reloaded_since(update, score, events):
        return [], False
    if not loops and not _same_model(update, score, events):
        return [], False
    fresh = _fresh(score, backpropagated)
    if order == "after" and loops and not any(varies(score.taint, loop) or varies(update.taint, loop)
                                              for loop in loops):
        # a score of the whole set inside the epoch loop of a pass over it (a diagnostic): the
        # pass is judged where it is ordered against the scores after it, in its caller
        return [], False
    if order == "after" and loops and previous_only(update.taint, loops[-1]):
        return [], True  # trains on the previous iteration's tokens, scored back then
    if order == "before":
        again = [loop for loop in loops if not (varies(score.taint, loop) and varies(update.taint, loop))]
        # a total of the loss the update then trains on (one forward for both) is the training's
        # log, unless only a later iteration of the repeating loop keeps it: then it is the score
        kept_late = any(later(score.site.fn, loop) in score.flags for loop in again)
        if again and fresh:
            return _verdict(update, score, loops, "again", events), True
        if again and kept_late:  # judge() drops it where a fresh score came first
            return [dataclasses.replace(v, flags=v.flags | {"kept_late"})
                    for v in _verdict(update, score, loops, "again", events)], True
        extra = data_roots(update.taint) - data_roots(score.taint)
        if loops and extra:  # the adaptation also reads data the scores do not: training data?
            return [Event("judgment", update.site, update.taint, score.taint, detail=MIXED_WITH_OTHER_DATA,
                          other=score.site, flags=switches(update, score))], True
        return [], True
    if not fresh:
        return [], False
    return _verdict(update, score, loops, "first", events), False


def _fresh(score: Event, backpropagated: set) -> bool:
    """A fresh evaluation: the score holds a loss no backward pass ran through (a training loss
    kept for logging is not a score of the tokens)."""
    origins = [label[1] for label in _passes(score.taint)]
    return not origins or any(origin not in backpropagated for origin in origins)


def _called_again(update: Event, score: Event, fresh: bool) -> list[Event]:
    """A call that scores and trains, made again by a loop here on the same tokens with the
    same model (an epoch loop around a score-first pass): each later call scores tokens the
    earlier ones trained on, and the last epoch's score is the one that remains."""
    if not fresh:
        return []
    for loop in update.site.loops:
        if varies(update.taint, loop) or varies(score.taint, loop) or _made_inside(update.state, loop)[0]:
            continue
        return [Event("judgment", update.site, update.taint, score.taint, detail=ADAPTED_FIRST, other=score.site,
                      flags=frozenset({"again"}) | switches(update, score))]
    return []


def _verdict(update: Event, score: Event, loops: tuple, how: str, events: list[Event]) -> list[Event]:
    """taint: what the update trained on; state: what the score scored (both must turn out to be
    validation data for the verdict to stand)."""
    def verdict(found, flags):
        return Event("judgment", update.site, update.taint, score.taint, detail=found,
                     other=score.site, flags=frozenset(flags) | switches(update, score))
    if not loops:  # a pass of its own over the tokens, before they are scored
        mixed = ("train",) in update.taint
        if not mixed and _after_export(update, events):
            return _evaluation_pass(update, score)
        if _after_training(update, events) and not mixed:  # placed at the call of the fine-tune
            return [Event("judgment", _here(update.site), update.taint, score.taint, detail=FINE_TUNED_AFTER_TRAINING,
                          other=_here(score.site), flags=frozenset({how}) | switches(update, score),
                          opening=_opening(update.site, score.site))] + _placing(update)
        return [verdict(TRAINED_BEFORE_SCORED, {how})]
    if ("train",) in update.taint and ("train",) not in score.taint:
        return [verdict(MIXED_WITH_OTHER_DATA, {how})]
    # Parameters made anew for each window are fitted per window, also when they start from the
    # last window's values (a warm start); a tensor kept across windows is not.
    inside, tensor = _made_inside(update.state, loops[-1])
    found = WINDOW_FIT if inside else KEPT_TENSOR_FIT if tensor else ADAPTED_FIRST
    flags = {how}
    if found in (WINDOW_FIT, KEPT_TENSOR_FIT) and _context_only(update, score):
        flags.add("context_only")
    if found == ADAPTED_FIRST and how == "again":
        # each pass of the loop around both scores the same tokens again, after training on them:
        # what is reported is the last pass's score (or the best of them), a second pass (C4)
        return [verdict(found, flags),
                Event("judgment", score.site, update.taint, score.taint, detail=SCORED_TWICE,
                      other=update.site, flags=frozenset({"pass", how}) | switches(update, score))]
    return [verdict(found, flags)]


def _repeated_loop(update: Event, scores: list[Event]):
    """A loop around the update, holding no score, that feeds it the same tokens every time."""
    for loop in reversed(update.site.loops):
        if any(loop in s.site.loops for s in scores):
            return None
        if not varies(update.taint, loop):
            return loop
    return None
