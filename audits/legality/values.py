"""What the interpreter knows about a value (a taint: a set of labels) and where things happened
(sites), plus the events a function's walk records.

Labels are tuples whose first item is the kind:
  ("val",) ("train",) ("gen",)   validation data, training data, model-generated tokens
  ("param", i)                   whatever the caller passes as parameter i (resolved at call sites)
  ("enclosing", key, i)          in a closure: parameter i of the function `key` that defines it
  ("iter", loop) ("prev", loop)  differs per iteration of `loop` / holds the previous iteration's data
  ("loss", site)                 a log-probability or loss computed at `site`
  ("earlier", site, kind)        a "loss" or "out" of `site` computed in an earlier iteration of a
                                 loop around it (carried round the loop: another pass)
  ("model",) ("prob",)           an output of the model / a probability
  ("out", site)                  the model output computed at `site` (which forward pass)
  ("target",)                    the tokens being scored
  ("state", site, kind)          trainable parameters: a "tensor" made at site, or a "module"'s
                                 parameters (site: where the module was made, None if unknown)
  ("obj", site, cls) ("objref", label)   an object made at site / the object a model call ran on
  ("optim",) ("grad",) ("lossfn",) ("hook",) ("fn", key)
  ("hash",) ("indicator",) ("stat",)   a hash key / target == hint / a reduction or matrix
                                 product (a statistic, not tokens)
  ("mask", site)                 an == or != test made at `site`
  ("calibstat", site)            activation statistics gathered at `site` (calibration, if they
                                 reach the weights)
  ("norm",)                      the closed-form normaliser of a one-token tilt (1 + p * (w - 1))
  ("shift", NAME) ("span", lo, hi)   NAME[:, :-1] (previous positions) / the positions a slice keeps
  ("bits",) ("cls", key)         a loss divided by ln 2 / a class of the script, as a value
  ("bound", key)                 on an object: its method `key` read off it, not yet called
  ("flag", NAME, on)             a setting read from environment variable NAME; `on`: its default
  ("mode", NAME, default)        a setting whose default is a word (`"linear"`), which tests
                                 compare with others (`== "max_conf"`)
  ("gate", site, how)            read from the scored token: a "lookup" (table[target]) or a
                                 "compare" (target < k)
  ("bytes", site) ("gated", site)
  ("select", site, switches)     the better of two passes picked at `site`, in code that runs
                                 under `switches` ("if:NAME:needed:default" flags)
  ("contrast", site)             two passes' losses set against each other (`nll_a - nll_b`): a
                                 test of it against a constant picks between them
  ("pending", site, op, parts)    an operation over a helper's parameters (a "select": min/max
                                 or comparison; a "spread": a repeat by a count), judged where
                                 it is called (the taints of its operands)
  ("filled", site, params, data) written into at `site` with data; `params`: the parameters it came
                                 from alone (a fill only where a caller passes data), else None;
                                 `data`: the data roots written (which split filled it)
  ("keyed", site)                a hash key first combined with the scored token at `site`
  ("reloaded", site)             an object whose weights were all loaded afresh at `site`
                                 (a strict load_state_dict of weights read back from a file)
  ("random", site) ("perm", site)   positions drawn at random at `site` / a random permutation of
                                 every position (random once cut short, `perm[:k]`)
  ("rng",)                       a random generator object (its `integers`, `choice` draw positions)
  ("drawn", site)                data read at positions drawn at `site`: a sample, not every token
  ("blob",)                      bytes decompressed from a blob (a payload of the artifact)
  ("loaded",)                    a module the script loaded at run time (importlib, by path)
  ("read",)                      deserialized from a file or bytes (torch.load, pickle.loads)
  ("unpacked", site)             the blob was first decompressed at `site` (where stored answers
                                 come back in: the finding names it)
"""

from __future__ import annotations

import dataclasses

import libcst as cst

Label = tuple
Taint = frozenset

EMPTY: Taint = frozenset()
VAL, TRAIN, GEN = ("val",), ("train",), ("gen",)
MODEL, PROB, TARGET = ("model",), ("prob",), ("target",)
OPTIM, GRAD, LOSSFN, HOOK = ("optim",), ("grad",), ("lossfn",), ("hook",)
HASH, INDICATOR, STAT = ("hash",), ("indicator",), ("stat",)
NORM = ("norm",)
BLOB = ("blob",)
LOADED = ("loaded",)
READ = ("read",)
DATA_KINDS = {"val", "train", "gen", "param", "enclosing"}
# Labels made at a site inside a callee are moved to the call site when the callee's effects are
# replayed in its caller: there, the call is where the loss was computed or the object made.
RELOCATED_KINDS = {"loss", "out", "state", "obj", "filled", "reloaded", "earlier"}
LOCAL_KINDS = {"iter", "prev"}


class Site:
    """Where something happened, seen from the function that judges it: `node` is in `fn`'s body
    at statement path `path` inside `loops`; `inner` is the operation itself (in `inner_fn`), which
    differs from `node` when the effect was replayed from a callee through the call `node`."""

    __slots__ = ("fn", "node", "path", "loops", "inner", "inner_fn", "chain", "statement")

    def __init__(self, fn, node: cst.CSTNode, path: tuple, loops: tuple, inner=None, inner_fn=None,
                 chain: tuple = (), statement: tuple | None = None):
        self.fn = fn
        self.node = node
        self.path = path
        self.loops = loops
        self.inner = node if inner is None else inner
        self.inner_fn = fn if inner_fn is None else inner_fn
        self.chain = chain  # the call nodes from `fn` down to `inner`, outermost first
        # the statement holding `inner` in `inner_fn` (two findings there are one place)
        self.statement = (self.inner_fn.key, path) if statement is None else statement

    def position(self):
        """Where `inner` is in its script's source (a libcst CodeRange), or None."""
        return self.inner_fn.script.position(self.inner)

    def call_position(self):
        """Where the last call on the way to `inner` is (the one into the function holding it),
        or None when `inner` was not reached through a call."""
        if not self.chain:
            return None
        for script in (self.inner_fn.script, self.fn.script):
            found = script.position(self.chain[-1])
            if found is not None:
                return found
        return None

    def _key(self):
        return (self.fn.key, id(self.node), id(self.inner))

    def __eq__(self, other):
        return isinstance(other, Site) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def moved(self, call: Site) -> Site:
        """This site seen from the caller, through the call at `call`."""
        return Site(call.fn, call.node, call.path, call.loops, self.inner, self.inner_fn,
                    (call.node,) + self.chain, self.statement)


@dataclasses.dataclass(frozen=True)
class Event:
    """Something a function does that a rule may care about.

    kind: score (loss accumulated into a running total), update (an optimizer step or in-place
    parameter update; taint = the data of the loss behind it, state = what was updated), backward,
    calib (data fed to a model whose activations are being recorded; state = the statistics
    gathered, flags = whether they reached the weights), sink (data serialized),
    export (a model's weights serialized: the artifact is written),
    net (a network call), lookup (a table read with a hashed key; taint = the key's, state = the
    table's), mix (a previous-token mixing path; taint = what the mixed-in term adds to the
    shifted value: a mask there stops it), pieces (a bytes-per-token table built from tokenizer
    pieces), ratio (bits divided by a bytes-per-token literal), tilt (a target == hint
    indicator meeting a probability), stored (the scored token compared with another value:
    taint = that value's, state = the token's), smoothing (count + k over total + k), judgment
    (an order found where the loop structure was visible; detail = what was found, a name of
    order.py; taint and state = the data it rests on), placed (a helper's pass placed by its
    caller: site = the update whose finding in the helper this replaces).
    """

    kind: str
    site: Site
    taint: Taint = EMPTY
    state: Taint = EMPTY
    detail: str = ""
    flags: frozenset = frozenset()
    other: Site | None = None  # judgment: the second operation (e.g. the score after an update)
    entered: Site | None = None  # the call that passed the validation data in, where it came in so
    opening: Site | None = None  # judgment on a pass of its own: where that pass begins

    def moved(self, call: Site, args: list[Taint]) -> Event:
        taint = substitute(self.taint, args, call, self.site.fn)
        entered = self.entered
        if entered is None and VAL in taint and VAL not in self.taint:
            entered = call  # a helper that is legal on other data is made a violation by this call
        return dataclasses.replace(self, site=self.site.moved(call), taint=taint,
                                   state=substitute(self.state, args, call, self.site.fn),
                                   other=self.other.moved(call) if self.other else None, entered=entered)


def switches(*events: Event) -> frozenset:
    """The "if:NAME:needed:default" flags of events: the settings (environment variables) the
    code runs under, on (1) or off (0), and their defaults."""
    return frozenset(flag for e in events for flag in e.flags if flag.startswith("if:"))


def exclusive(a: Event, b: Event) -> bool:
    """Do the two need one setting both on and off (`if h.ttt_enabled:` ... and
    `if not h.ttt_enabled:` ...)? Then they never run together."""
    needed = {}
    for flag in switches(a):
        _, name, need, _ = flag.split(":")
        needed[name] = need
    for flag in switches(b):
        _, name, need, _ = flag.split(":")
        if needed.get(name, need) != need:
            return True
    return False


def non_default(event: Event) -> list[str]:
    """How the settings must differ from their defaults for the event's code to run."""
    out = []
    for flag in sorted(switches(event)):
        _, name, need, default = flag.split(":")
        if need != default:
            out.append(f"{name} is set" if need == "1" else f"{name} is turned off")
    return out


def at_default(flags: frozenset) -> list[tuple[str, bool]]:
    """The settings that code under these flags needs as they are by default: (NAME, must be on)."""
    out = []
    for flag in sorted(f for f in flags if f.startswith("if:")):
        _, name, need, default = flag.split(":")
        if need == default:
            out.append((name, need == "1"))
    return out


def loss_data(taint: Taint) -> Taint:
    """What an update's loss rests on: its data, per-iteration labels, forward passes, positions."""
    return frozenset(label for label in taint
                     if label[0] in ("val", "train", "gen", "param", "enclosing", "iter", "prev", "loss", "out",
                                     "span"))


def is_update(event: Event) -> bool:
    """An optimizer step or in-place parameter update (a `.step()` whose receiver turned out to be
    an optimizer once the caller's arguments are known)."""
    return event.kind == "update" and OPTIM in event.state


def is_score(event: Event) -> bool:
    """A running total of losses or model outputs on data (not of byte or token counts)."""
    return event.kind == "score" and (MODEL in event.taint or any(label[0] == "loss" for label in event.taint))


def computed(taint: Taint) -> bool:
    """Computed by a model or from its outputs, or a sample of it: no longer the tokens of a
    split or positions in them (random prompts run through a model, the weights a search
    perturbs)."""
    return bool(MODEL in taint or PROB in taint or GEN in taint
                or kinds(taint, "loss") or kinds(taint, "out") or kinds(taint, "state"))


def as_read(taint: Taint) -> bool:
    """The tokens of a split as read (or a helper's parameter that may be them), not a
    statistic of them."""
    return has_data(taint) and not computed(taint) and STAT not in taint


def data_roots(taint: Taint) -> Taint:
    return frozenset(label for label in taint if label[0] in DATA_KINDS)


def has_data(taint: Taint) -> bool:
    return any(label[0] in DATA_KINDS for label in taint)


def filled(site: Site, written: Taint) -> Label:
    """The label of a write of `written` (data) at `site`: which parameters alone it came from,
    or None where data of another kind was written too."""
    data = data_roots(written)
    if all(label[0] == "param" for label in data):
        return ("filled", site, frozenset(label[1] for label in data), data)
    return ("filled", site, None, data)


def enclosed(taint: Taint, scope) -> Taint:
    """What a closure reads from the function `scope` that defines it: that function's parameters
    are its own, not the closure's (substitute gives them back where `scope` calls it)."""
    out = set()
    for label in taint:
        if label[0] == "param":
            out.add(("enclosing", scope.key, label[1]))
        elif label[0] == "objref" and label[1][0] == "param":
            out.add(("objref", ("enclosing", scope.key, label[1][1])))
        else:
            out.add(label)
    return frozenset(out)


def kinds(taint: Taint, kind: str) -> list[Label]:
    return [label for label in taint if label[0] == kind]


def objref(taint: Taint) -> Taint:
    """The labels that identify the object a model call ran on (not data flowing into it)."""
    out = set()
    for label in taint:
        if label[0] == "objref":
            out.add(label)
        elif label[0] in ("obj", "param"):
            out.add(("objref", label))
        elif label[0] == "reloaded":  # its weights as loaded there
            out.add(label)
    return frozenset(out)


def keyed(taint: Taint, site: Site) -> Taint:
    """A hash of `taint`: marked where the scored token first enters the key, the line that
    shows an answer-keyed table (the reads come later, often many lines away)."""
    if TARGET in taint and not kinds(taint, "keyed"):
        return frozenset({("keyed", site)})
    return EMPTY


def passes(taint: Taint, kind: str = "loss") -> set:
    """The passes a value's losses (or model outputs) come from: each place they were computed,
    and each such place in an earlier iteration of a loop around it (a best-so-far carried round
    the loop over checkpoints or epochs is another pass than this iteration's)."""
    return {label[1] for label in kinds(taint, kind)} | {
        ("earlier", label[1]) for label in kinds(taint, "earlier") if label[2] == kind}


def picks_by_outcome(*compared: Taint) -> bool:
    """Losses of two passes compared where they score the realized token: the better one is
    picked by the outcome (`torch.minimum(nll_a, nll_b)`, `best = torch.minimum(best, nll)` over
    checkpoints, the larger of two models' probabilities of the token). With several operands,
    two of them must hold such a loss (a loss against a constant is a clamp). A comparison of
    context-only figures (an entropy gate, an expected gain from a hint's probability) reads no
    scored token and picks nothing by it, nor does a bound on a step size worked out from a
    gradient."""
    union = frozenset().union(*compared)
    if TARGET not in union or GRAD in union:
        return False
    if len(compared) > 1:
        if sum(1 for part in compared if kinds(part, "loss") or PROB in part) < 2:
            return False
        if sum(1 for part in compared if PROB in part and TARGET in part) >= 2:
            return True  # two probabilities of the realized token: the larger is kept by it
    return len(passes(union)) >= 2 or (PROB in union and len(passes(union, "out")) >= 2)


def _spread(value: Taint, repeats: Taint) -> bool:
    """`np.repeat(lp / n, n)` with `n` read from a table at the scored token (its byte count): the
    token's log-probability spread over its own bytes, as `p ** (1 / n)` spreads it."""
    return bool((kinds(value, "loss") or PROB in value) and kinds(repeats, "gate"))


# What an operation on a helper's parameters is judged on where the helper is called, and what
# its operands keep meanwhile.
_JUDGED = {"select": lambda *parts: picks_by_outcome(*parts), "spread": _spread}
_PENDING_KINDS = {"loss", "out", "earlier", "param", "enclosing", "target", "grad", "prob", "gate"}


def judged(op: str, site: Site, parts, switches: frozenset = frozenset()) -> Taint:
    """An operation at `site` over its operands `parts`: ("select", site, switches) where a min/max/argmin
    or comparison picks the better of two passes by the realized token; ("bytes", gate site) where
    a repeat spreads a token's log-probability over the bytes a table gives the scored token. Where
    the operands are still a helper's parameters, ("pending", site, op, parts), judged again
    where the helper is called (substitute)."""
    parts = tuple(part for part in parts if part or op == "spread")  # a constant is no operand of a pick
    if parts and _JUDGED[op](*parts):
        if op == "spread":
            return frozenset(("bytes", label[1]) for label in kinds(parts[1], "gate"))
        return frozenset({("select", site, switches)})
    if any(label[0] in ("param", "enclosing") for part in parts for label in part):
        kept = tuple(frozenset(label for label in part if label[0] in _PENDING_KINDS) for part in parts)
        return frozenset({("pending", site, op, kept)})
    return EMPTY


def pick(site: Site, parts, switches: frozenset = frozenset()) -> Taint:
    """`switches`: the settings the code that picks runs under (a pick in a branch that a setting
    turns on is made only when it is on, wherever the picked value goes)."""
    return judged("select", site, parts, switches)


def substitute(taint: Taint, args: list[Taint], call: Site, callee) -> Taint:
    """A callee's taint seen in its caller: parameters replaced by the arguments' taints, labels
    made inside the callee moved to the call site, the callee's loop labels dropped."""
    out = set()
    for label in taint:
        kind = label[0]
        if kind == "param":
            if label[1] < len(args):
                out |= args[label[1]]
        elif kind == "objref" and label[1][0] == "param":
            if label[1][1] < len(args):
                out |= objref(args[label[1][1]])
        elif kind == "enclosing" and label[1] == call.fn.key:  # back in the function that defines it
            out.add(("param", label[2]))
        elif kind == "objref" and label[1][0] == "enclosing" and label[1][1] == call.fn.key:
            out.add(("objref", ("param", label[1][2])))
        elif kind in LOCAL_KINDS:
            continue
        elif kind == "pending":
            parts = [substitute(part, args, call, callee) for part in label[3]]
            site = label[1].moved(call) if label[1].fn is callee else label[1]
            out |= judged(label[2], site, parts)
        elif kind == "filled" and label[2] is not None and label[1].fn is callee:
            written = frozenset().union(*(args[i] for i in label[2] if i < len(args)))
            if has_data(written):  # else the caller's arguments were settings, not data
                out.add(filled(label[1].moved(call), written))
        elif kind == "filled" and label[1].fn is callee:  # data of several kinds: each seen from here
            out.add(("filled", label[1].moved(call), None,
                     data_roots(substitute(label[3], args, call, callee))))
        elif kind in RELOCATED_KINDS and label[1] is not None and label[1].fn is callee:
            out.add((kind, label[1].moved(call)) + label[2:])
        else:
            out.add(label)
    return frozenset(out)
