"""The abstract interpreter: walks one function's statements in order and computes, for every
value, where its data comes from (a taint), and records the events the rules judge.

Flow-sensitive within a function (a name holds what was last assigned to it; branches join;
loop bodies are walked twice so values carried around the loop are seen), summary-based across
functions (a callee is walked once with its parameters as symbols; each call replays its summary
with the arguments substituted). Nothing is ever executed.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from audits.legality import apis, env, imports, operators, order, shapes, syntax
from audits.legality.program import ClassInfo, Function, Program, compound_blocks
from audits.legality.values import (
    EMPTY, GRAD, HASH, INDICATOR, MODEL, NORM, OPTIM, PROB, STAT, TARGET, Event, Site, Taint,
    as_read, computed, data_roots, enclosed, filled, has_data, keyed, kinds, loss_data, pick, substitute,
)
from audits.submission import runsettings

# What an attribute keeps wherever it is read: where data came from and what objects it holds
# (a random generator, positions drawn at random, data read at them, among them).
_FIELD_KINDS = {"val", "train", "gen", "filled", "state", "optim", "obj", "objref", "lossfn", "fn",
                "flag", "mode", "rng", "random", "perm", "drawn"}


@dataclasses.dataclass
class Summary:
    """What calling a function does, in terms of its parameters."""

    returns: Taint = EMPTY
    # where every return is a tuple of one length: what each position holds (`a, b = f(x)`)
    elements: tuple[Taint, ...] | None = None
    mutates: dict[int, Taint] = dataclasses.field(default_factory=dict)
    # a closure's names of its enclosing function that it changes (`cache.update(...)`)
    free_mutates: dict[str, Taint] = dataclasses.field(default_factory=dict)
    grad: Taint = EMPTY  # losses backpropagated and not yet consumed by an optimizer step
    clears_grad: bool = False  # it zeroes gradients (so the caller's pending ones are gone)
    events: list[Event] = dataclasses.field(default_factory=list)
    # what running it reaches: functions called or passed as values, classes instantiated
    reaches: set[str] = dataclasses.field(default_factory=set)
    classes: set[str] = dataclasses.field(default_factory=set)
    # per function reached: the settings turned on (`if:NAME:1:0` flags) every place reaching it needs
    guards: dict[str, frozenset] = dataclasses.field(default_factory=dict)
    # per function reached: every settings test (`if:NAME:need:default`) all places reaching it pass
    tests: dict[str, frozenset] = dataclasses.field(default_factory=dict)
    # what it prints: (pattern, its longest literal, the settings tests the print runs under)
    prints: list[tuple[str, str, frozenset]] = dataclasses.field(default_factory=list)
    # the parameters whose values it puts into weights, the artifact or a field (statistics used)
    uses: frozenset[int] = frozenset()


class Analysis:
    """Summaries of every function, computed on demand (callee before caller), and the attribute
    table: what was stored under each attribute name anywhere (only concrete data, not symbols)."""

    def __init__(self, program: Program):
        self.program = program
        self.summaries: dict[str, Summary] = {}
        self.in_progress: set[str] = set()
        self.active: dict[str, FunctionWalk] = {}  # functions being walked (closures read them)
        self.fields: dict[str, Taint] = {}
        self.modules: dict[str, FunctionWalk] = {}  # per script: the walk of its module body

    def summary(self, fn: Function) -> Summary:
        if fn.key in self.summaries:
            return self.summaries[fn.key]
        if fn.key in self.in_progress:
            return Summary()  # recursion: the partial view is empty
        self.in_progress.add(fn.key)
        walk = FunctionWalk(self, fn)
        walk.run()
        self.in_progress.discard(fn.key)
        self.summaries[fn.key] = walk.summary
        return walk.summary

    @staticmethod
    def concrete(taint: Taint) -> Taint:
        """What an attribute keeps: not what depends on the caller (a parameter symbol means
        nothing elsewhere)."""
        return frozenset(label for label in taint if label[0] in _FIELD_KINDS
                         and not (label[0] == "objref" and label[1][0] == "param"))

    def store_field(self, name: str, taint: Taint) -> None:
        concrete = self.concrete(taint)
        if concrete:
            self.fields[name] = self.fields.get(name, EMPTY) | concrete


class FunctionWalk:
    def __init__(self, analysis: Analysis, fn: Function):
        self.a = analysis
        self.p = analysis.program
        self.fn = fn
        self.script = fn.script
        self.rel = fn.script.rel
        self.summary = Summary()
        self.target_nodes: set[int] = set()  # subscripts found to hold the tokens being scored
        self.target_names: set[str] = set()
        # names passed as the targets of a loss: where one is compared with a name only gathered
        # (`logp.gather(1, hint)`), that one reads a hint's probability, not the scored token's
        self.loss_targets: set[str] = set()
        self._reset()

    def _reset(self) -> None:
        self.env: dict[str, Taint] = {}
        self.grad: Taint = EMPTY
        self.cleared_grad = False
        self.path: tuple = ()
        self.loops: tuple = ()
        self.while_loops: tuple = ()
        self.loop_entry: list[set[str]] = []
        self.hooks = False
        self.recording = True
        self.events: list[Event] = []
        self.returns: Taint = EMPTY
        self.tuple_returns: list[list[Taint]] = []  # each `return a, b`'s elements
        self.other_return = False  # a return or yield of anything but a tuple
        # per call node, each summary applied at it (calls.apply) with what its elements need
        # to be read at the call, or None where it returns no tuples
        self.call_elements: dict[int, list[tuple | None]] = {}
        self.mutates: dict[int, Taint] = {}
        self.free_mutates: dict[str, Taint] = {}
        self.shapes_seen: list[tuple] = []  # assigned slices of data: (node, base, shape, taint)
        self.subsets: dict[str, str] = {}  # `jv = j[valid]`: a name holding some of another's items
        self.copies: dict[str, str] = {}  # `flat = ids.cpu().numpy()`: the same tokens, converted
        self.discovered: set[str] = set()  # names passed as the target of a loss or gather
        self.log_names: set[str] = set()  # names holding a normalizer (log Z), for tilts
        self.boost_names: frozenset[str] = frozenset()  # names bound to a tilt's `expm1(b)`
        self.saw_norm = False  # the current statement divides by, or takes the log of, a normalizer
        self.tilts: list[cst.CSTNode] = []  # where, in the current statement, a tilt meets a probability
        self.saw_piece = False  # a tokenizer piece method was called (inside the current loop)
        self.storing = False
        self.switched: frozenset = frozenset()  # the settings tests the current code runs under
        self.later: frozenset = frozenset()  # flags of the loops whose first iteration skips this code
        self.zeroed: dict[str, set] = {}  # totals set to zero inside loops they come from outside of
        # names bound to a test (`should_score = every or epoch == E - 1`): an `if` on the name
        # reads the test itself, as a setting read through a name is read
        self.tests: dict[str, cst.BaseExpression] = {}
        self.prints: list[tuple[str, str, frozenset]] = []
        self.codes: dict[int, str] = {}
        self.shifted: dict[str, Taint] = {}  # what each value shifted one position held (`x[:, :-1]`)
        self.hook_stats: Taint = EMPTY  # the statistics forward hooks installed here gather
        self.used_stats: set = set()  # statistics that reached the weights, the artifact or a field

    # --- driving -------------------------------------------------------------------------------

    def run(self) -> None:
        """Walk the body; walk it once more when it turned out to score targets that were used
        before the line that revealed them (a cross_entropy call, a gather, a shifted slice)."""
        for _ in range(2):
            self._reset()
            self.a.active[self.fn.key] = self
            if self.fn.node is None:
                self.a.modules[self.rel] = self
            for i, name in enumerate(self.fn.params):
                label = frozenset({("param", i)})
                if i == 0 and name == "cls" and self.fn.cls is not None:
                    # a classmethod's `cls(...)` makes its own class, not a call of an unknown model
                    label |= {("cls", f"{self.fn.cls.script.rel}:{self.fn.cls.name}")}
                self.env[name] = label | (frozenset({TARGET}) if name in self.target_names else EMPTY)
            self.block(self.fn.body, 0)
            nodes = self._targets_from_shapes()
            if nodes <= self.target_nodes and self.discovered <= self.target_names:
                break
            self.target_nodes |= nodes
            self.target_names |= self.discovered
        self.a.active.pop(self.fn.key, None)
        self.summary.returns = self.returns
        self.summary.elements = self._elements()
        self.summary.mutates = self.mutates
        self.summary.free_mutates = self.free_mutates
        self.summary.grad = self.grad
        self.summary.clears_grad = self.cleared_grad
        self.summary.prints = self.prints
        self.summary.events = order.judge(self.fn, self._statistics_read(self.events))
        self.summary.uses = frozenset(label[1] for label in self.used_stats if label[0] == "param")

    def _statistics_read(self, events: list[Event]) -> list[Event]:
        """Calibration is what quantizes the weights: statistics gathered here count where they
        reach the weights, the artifact or an object's field ("used"); where they leave the function
        (returned, put into an argument) its callers decide ("open"); where they do neither they
        were only logged ("unused")."""
        for e in events:
            if e.kind in ("update", "sink", "export"):
                self.use_stats(e.taint | e.state)
        leaving = self.returns.union(*self.mutates.values(), *self.free_mutates.values())
        out = []
        for e in events:
            stats = set(kinds(e.state, "calibstat")) if e.kind == "calib" else set()
            if stats and "used" not in e.flags and "unused" not in e.flags:
                flags = e.flags - {"open"}
                if stats & self.used_stats:
                    flags |= {"used"}
                elif stats & leaving:
                    flags |= {"open"}
                else:
                    flags |= {"unused"}
                e = dataclasses.replace(e, flags=flags)
            out.append(e)
        return out

    def use_stats(self, taint: Taint) -> None:
        self.used_stats |= {label for label in taint if label[0] in ("calibstat", "param")}

    def store_field(self, name: str, taint: Taint) -> None:
        self.use_stats(taint)
        self.a.store_field(name, taint)

    def _elements(self) -> tuple[Taint, ...] | None:
        lengths = {len(parts) for parts in self.tuple_returns}
        if self.other_return or len(lengths) != 1:
            return None
        return tuple(frozenset().union(*column) for column in zip(*self.tuple_returns))

    def _targets_from_shapes(self) -> set[int]:
        """Subscripts that select the position after others of the same tokens: the targets."""
        found = set()
        by_base: dict[str, list] = {}
        for node, base, shape, taint in self.shapes_seen:
            if has_data(taint) and MODEL not in taint:
                by_base.setdefault(self._original(base), []).append((node, shapes.renamed(shape, self._superset)))
        for items in by_base.values():
            by_position = any(shapes.context_by_position(shape) for _, shape in items)
            for node, shape in items:
                # the last of a chain (`t[s-1:]`, `t[s:]` as context, `t[s+1:]`): the targets
                later = any(shapes.one_later(shape, other) for _, other in items)
                latest = not any(shapes.one_later(other, shape) for _, other in items)
                if by_position:  # `t[p]` after the context `t[p - 2]`, `t[p - 1]`
                    later = later or any(shapes.position_after(shape, other) for _, other in items)
                    latest = latest and not any(shapes.position_after(other, shape) for _, other in items)
                if (later and latest) or (by_position and shapes.next_position(shape)):
                    found.add(id(node))
        return found

    def _original(self, name: str) -> str:
        """The name `name` is a converted copy of (`flat = ids.cpu().numpy()`), through every such
        copy: slices of the copy and of the original read positions of the same tokens."""
        seen = {name}
        while name in self.copies and self.copies[name] not in seen:
            name = self.copies[name]
            seen.add(name)
        return name

    def _superset(self, name: str) -> str:
        """The name whose items `name` was taken from, through every `a = b[...]` (a cycle stops)."""
        seen = {name}
        while name in self.subsets and self.subsets[name] not in seen:
            name = self.subsets[name]
            seen.add(name)
        return name

    def code(self, node: cst.CSTNode) -> str:
        key = id(node)
        if key not in self.codes:
            self.codes[key] = self.script.module.code_for_node(node).strip()
        return self.codes[key]

    def site(self, node: cst.CSTNode) -> Site:
        return Site(self.fn, node, self.path, self.loops)

    def reach(self, key: str) -> None:
        """The function `key` runs from here, under the settings tests the code here runs under
        that turn on a setting that is off by default (`if args.slot_enabled:`)."""
        self.summary.reaches.add(key)
        switches = frozenset(f for f in self.switched if f.endswith(":1:0"))
        guards = self.summary.guards
        guards[key] = guards[key] & switches if key in guards else switches
        tests = self.summary.tests
        tests[key] = tests[key] & self.switched if key in tests else frozenset(self.switched)

    def emit(self, event: Event) -> None:
        if not self.recording:
            return
        if self.switched or self.later:  # inside `if FLAG:` on a setting, `if epoch == E - 1:`
            event = dataclasses.replace(event, flags=event.flags | self.switched | self.later)
        self.events.append(event)

    # --- statements ----------------------------------------------------------------------------

    def block(self, stmts, part: int) -> None:
        base = self.path
        for i, stmt in enumerate(stmts):
            self.path = base + ((part, i),)
            self.statement(stmt)
        self.path = base

    def statement(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            if len(stmt.body) == 1:
                self.small(stmt.body[0])
                return
            # `train(...); fine_tune(...); export(...)` on one line run one after another, as
            # lines do: each has a place of its own in the order of the function
            base = self.path
            for j, small in enumerate(stmt.body):
                self.path = base + ((0, j),)
                self.small(small)
            self.path = base
        elif isinstance(stmt, cst.If):
            self.if_stmt(stmt)
        elif isinstance(stmt, (cst.For, cst.While)):
            self.loop(stmt)
        elif isinstance(stmt, cst.With):
            self.with_stmt(stmt)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            for part, block in enumerate(compound_blocks(stmt)):
                self.block(block, part)
        elif isinstance(stmt, cst.FunctionDef):
            nested = self.fn.nested.get(stmt.name.value)
            if nested is not None:
                self.env[stmt.name.value] = frozenset({("fn", nested.key)})
        elif isinstance(stmt, cst.ClassDef):
            if self.fn.node is None:
                self.class_body(stmt)
        elif isinstance(stmt, cst.Match):
            self.value(stmt.subject)
            before = dict(self.env)
            joined = dict(before)
            for k in range(len(stmt.cases)):
                self.env = dict(before)
                self.block(compound_blocks(stmt)[k], -(k + 1))
                joined = env.join(joined, self.env)
            self.env = joined

    def class_body(self, node: cst.ClassDef) -> None:
        """Class-level assignments are attributes (`val_files = os.path.join(...)`)."""
        saved = self.env
        self.env = dict(saved)
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]
        for stmt in body:
            if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in stmt.body:
                    if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
                        taint = self.value(small.value)
                        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
                            else [small.target]
                        for target in targets:
                            if isinstance(target, cst.Name):
                                self.env[target.value] = taint
                                self.store_field(target.value, taint)
        self.env = saved

    def small(self, node: cst.CSTNode) -> None:
        self.saw_norm = False
        self.tilts = []
        if isinstance(node, cst.Expr):
            self.value(node.value)
            call = node.value
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                    and call.func.attr.value == "zero_":  # `doc_loss[b].zero_()`
                self.zero(call.func.value)
        elif isinstance(node, cst.Assign):
            parts = syntax.unpacked(node)
            returned = None
            if parts is not None:  # `x, y = t[:-1], t[1:]`: each name gets its own value
                taints = [self.value(v) for v in parts]
                taint = frozenset().union(*taints)
            else:
                taint = self.value(node.value)
                returned = self.returned_elements(node, taint)
            self.tilt(node.value, taint)
            self.note_slice(node.value)
            self.note_subset(node)
            for target in node.targets:
                # `total = 0.0`, `nll, count = 0.0, 0`, `acc[b] = torch.zeros(n)`: totals started afresh
                names = [e.value for e in target.target.elements] if parts is not None else [target.target]
                for name, value in zip(names, parts if parts is not None else [node.value]):
                    if syntax.is_zero(value):
                        self.zero(name)
                if self.descent(target.target, node.value, taint, node):
                    continue
                self.accumulation(target.target, node.value, taint, node)
                if parts is not None:
                    for element, part_taint in zip(target.target.elements, taints):
                        self.bind(element.value, part_taint)
                elif returned is not None:
                    for element, part_taint in zip(target.target.elements, returned):
                        self.bind(element.value, part_taint)
                else:
                    self.bind(target.target, taint)
                if isinstance(target.target, cst.Name) and syntax.is_test(node.value):
                    self.tests[target.target.value] = node.value
                if self.saw_norm and isinstance(target.target, cst.Name):
                    self.log_names.add(target.target.value)
                if isinstance(target.target, cst.Name) and operators.boost_factor(node.value):
                    self.boost_names |= {target.target.value}
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                taint = self.value(node.value)
                self.bind(node.target, taint)
        elif isinstance(node, cst.AugAssign):
            self.aug_assign(node)
        elif isinstance(node, cst.Return):
            if node.value is None:
                self.other_return = True
            else:
                parts = syntax.elements(node.value)
                if parts is None:
                    self.other_return = True
                    taint = self.value(node.value)
                else:
                    elements = [self.value(part) for part in parts]
                    self.tuple_returns.append(elements)
                    taint = frozenset().union(*elements)
                self.tilt(node.value, taint)
                self.returns |= taint
        elif isinstance(node, cst.Del):
            for name in syntax.names(node.target):
                dropped = self.env.pop(name, EMPTY)
                if kinds(dropped, "state"):  # trained parameters thrown away (see order.judge)
                    self.emit(Event("drop", self.site(node), dropped))

    def returned_elements(self, node: cst.Assign, taint: Taint) -> list[Taint] | None:
        """`a, b = f(x)` where f returns tuples of that length: each name gets what its position
        holds, plus what the call itself added (a model's output label), not the other elements."""
        call = node.value
        if not isinstance(call, cst.Call):
            return None
        applied = self.call_elements.pop(id(call), [])
        if len(applied) != 1 or applied[0] is None:
            return None  # no function of ours, or several it may be: the whole result for each
        summary, actuals, site, fn = applied[0]
        if not syntax.unpacks_into(node, len(summary.elements)):
            return None
        elements = [substitute(e, actuals, site, fn) for e in summary.elements]
        extra = taint - frozenset().union(*elements)
        return [element | extra for element in elements]

    def note_subset(self, node: cst.Assign) -> None:
        """`jv = j[valid]`: positions kept from `j`, so `t[jv - k]` reads before the positions
        `t[j]` reads (see _targets_from_shapes)."""
        value = shapes.unwrap(node.value)
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        name = node.targets[0].target.value
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name):
            self.subsets[name] = value.value.value
        elif isinstance(value, cst.Name) and value.value != name:
            self.copies[name] = value.value

    def note_slice(self, value: cst.BaseExpression, context_only: bool = False) -> None:
        """`y = chunk[1:]`, `tok = int(ids[p])`: a named slice of data, kept to find which of the
        slices of one tensor is the later one (the targets; see run). Inside arithmetic only the
        context an n-gram reads by position counts (`h ^= t[j - (w - k)] * prime`): shifted
        slices there are differences or midpoints (`(c[:-1] + c[1:]) / 2`), not targets."""
        if isinstance(value, cst.Tuple):  # `x, y = t[:-1], t[1:]`
            for element in value.elements:
                self.note_slice(element.value, context_only)
            return
        if isinstance(value, cst.BinaryOperation):
            self.note_slice(value.left, True)
            self.note_slice(value.right, True)
            return
        sub = shapes.unwrap(value)
        if not isinstance(sub, cst.Subscript):
            return
        spelled = imports.dotted(sub.value)
        base = self.value(sub.value) if spelled is not None else EMPTY
        if spelled is not None and has_data(base) and MODEL not in base:
            shape = shapes.index_shape(sub, self.code)
            if not context_only or shapes.context_by_position(shape):
                self.shapes_seen.append((sub, spelled, shape, base))

    def normalizer(self, taint: Taint) -> None:
        """A log or a divisor that does not involve the scored token, or the closed form of a
        tilt's normaliser: a candidate log Z."""
        if NORM in taint or (INDICATOR not in taint and TARGET not in taint):
            self.saw_norm = True

    def fixed_boost(self, boosts) -> bool:
        """Boost factors of a tilt's closed-form normaliser that read no name holding the scored
        token (a boost picked by the target makes log Z depend on it: not one distribution)."""
        def reads_target(name):
            taint = self.env.get(name.value, EMPTY)
            return TARGET in taint or bool(kinds(taint, "gate"))
        return bool(boosts) and not any(reads_target(n) for b in boosts for n in syntax.name_nodes(b))

    def tilt(self, value_node, taint: Taint) -> None:
        """Where a tilt indicator (target == hint) first met a probability or log-probability in
        this statement: renormalized if the statement also divides by, or takes the log of, a
        value that does not involve the target, or reads one computed before (log Z)."""
        if not self.tilts:
            return
        names = {n.value for n in syntax.name_nodes(value_node)}
        normalized = self.saw_norm or bool(names & self.log_names)
        for node in self.tilts:
            self.emit(Event("tilt", self.site(node), taint,
                            flags=frozenset({"normalized"} if normalized else set())))

    def if_stmt(self, node: cst.If) -> None:
        self.value(node.test)
        if syntax.is_false(node.test):
            if isinstance(node.orelse, cst.Else):
                self.block(compound_blocks(node)[1], -2)
            elif isinstance(node.orelse, cst.If):
                self.block([node.orelse], -2)
            return
        test = self.tests.get(node.test.value, node.test) if isinstance(node.test, cst.Name) else node.test
        body_needs, else_needs = self.requirements(test)
        before = dict(self.env)
        blocks = compound_blocks(node)
        saved, later = self.switched, self.later
        self.switched = saved | env.needs(body_needs)
        self.later = later | self.later_iterations(test)
        tests = dict(self.tests)
        self.block(blocks[0], order.TERMINAL - 1 if syntax.leaves(blocks[0]) else -1)
        self.later = later
        after_body, body_tests = self.env, self.tests
        self.env, self.tests = dict(before), tests
        self.switched = saved | env.needs(else_needs)
        if len(blocks) > 1:
            self.block(blocks[1], order.TERMINAL - 2 if syntax.leaves(blocks[1]) else -2)
        self.switched = saved
        self.env = env.join(after_body, self.env)
        # a name stays bound to a test only where both branches leave it bound to the same one
        self.tests = {name: t for name, t in self.tests.items() if body_tests.get(name) is t}

    def later_iterations(self, test: cst.BaseExpression) -> frozenset:
        """`order.later` flags of the enclosing loops whose counter the test requires past its
        first value: `epoch == num_epochs - 1`, `epoch > 0`, `epoch != 0` (with `and`, either
        side; with `or`, both sides, or the one left where the other needs a setting that is off
        by default)."""
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self.later_iterations(test.left) | self.later_iterations(test.right)
        if isinstance(test, cst.BooleanOperation):
            sides = [side for side in (test.left, test.right) if not self.off_by_default(side)]
            if len(sides) == 1:
                return self.later_iterations(sides[0])
            return self.later_iterations(test.left) & self.later_iterations(test.right)
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.left, cst.Name)):
            return frozenset()
        comp = test.comparisons[0]
        bound = syntax.number(comp.comparator)
        past_first = (isinstance(comp.operator, (cst.GreaterThan, cst.NotEqual)) and bound == 0) or (
            isinstance(comp.operator, (cst.Equal, cst.GreaterThanEqual)) and (bound is None or bound >= 1))
        counters = [label[1] for label in self.env.get(test.left.value, EMPTY)
                    if label[0] == "iter" and label[1] in self.loops]
        if not past_first or len(counters) != 1:
            return frozenset()
        return frozenset({order.later(self.fn, counters[0])})

    def off_by_default(self, test: cst.BaseExpression) -> bool:
        """Whether the test holds only with a setting changed from its default."""
        return any(need != default for need, default in self.requirements(test)[0].values())

    def requirements(self, test: cst.BaseExpression) -> tuple[dict, dict]:
        """The settings (environment variables read into flags) the two branches of an `if` need:
        ({NAME: (must be on, on by default)} for the body, the same for the else branch), as far
        as the test reads them directly (`args.slot_enabled`, `not h.ttt_enabled`, `steps > 0`,
        `a and b`)."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            body, orelse = self.requirements(test.expression)
            return orelse, body
        if isinstance(test, cst.BooleanOperation):
            (lb, le), (rb, re_) = self.requirements(test.left), self.requirements(test.right)
            if isinstance(test.operator, cst.And):
                return {**lb, **rb}, {}
            return {}, {**le, **re_}
        if isinstance(test, cst.Comparison):
            if len(test.comparisons) != 1:
                return {}, {}
            comp = test.comparisons[0]
            if isinstance(comp.comparator, cst.SimpleString):
                return self.mode_requirements(test.left, comp)
            bound = syntax.number(comp.comparator)
            if bound is None:
                return {}, {}
            body, orelse = self.requirements(test.left)
            if bound == 0:
                if isinstance(comp.operator, (cst.GreaterThan, cst.NotEqual)):
                    return body, orelse
                if isinstance(comp.operator, (cst.Equal, cst.LessThanEqual)):
                    return orelse, body
                return {}, {}
            # Against another bound (`args.ngram_order >= 2`), only a setting that is 0 by
            # default has a known default: the test as it reads at 0 says which branch is the
            # default's, and the other runs only with the setting changed.
            if any(default for _, default in body.values()):
                return {}, {}
            holds = syntax.compare(comp.operator, 0, bound)
            if holds is None:
                return {}, {}
            return (orelse, body) if holds else (body, orelse)
        while isinstance(test, cst.Call) and isinstance(test.func, cst.Name) \
                and test.func.value in ("bool", "int", "float") and len(test.args) == 1:
            test = test.args[0].value
        if not isinstance(test, (cst.Name, cst.Attribute)):
            return {}, {}  # only a setting read directly (evaluating it again records nothing)
        flags = kinds(self.value(test), "flag")
        if isinstance(test, cst.Attribute):  # a settings object's field, not all it holds
            own = {label for label in flags if label[1].lower() == test.attr.value.lower()}
            flags = own or flags
        return ({label[1]: (True, label[2]) for label in flags},
                {label[1]: (False, label[2]) for label in flags})

    def mode_requirements(self, left: cst.BaseExpression, comp: cst.ComparisonTarget) -> tuple[dict, dict]:
        """`mode == "max_conf"`, mode a setting whose default is a word: the branches need the
        setting "NAME=max_conf" on or off, on by default where the default is that word. Against
        `"1"` or `"0"`, with a default that reads as on or off, the setting itself on or off."""
        word = comp.comparator.evaluated_value
        if not isinstance(comp.operator, (cst.Equal, cst.NotEqual)) or not runsettings.mode_word(word) or not word:
            return {}, {}
        taint = self.value(left)
        on = runsettings.word_on(word)
        modes = kinds(taint, "mode")
        if on is not None and all(runsettings.word_on(default) is not None for _, _, default in modes):
            # `== "1"`, `== "0"` where the default reads as on or off: the setting itself on or off
            body = {name: (on, default) for _, name, default in kinds(taint, "flag")}
            orelse = {name: (not on, default) for name, (_, default) in body.items()}
        else:
            body = {f"{name}={word}": (True, default == word) for _, name, default in modes}
            orelse = {name: (False, default) for name, (_, default) in body.items()}
        return (body, orelse) if isinstance(comp.operator, cst.Equal) else (orelse, body)

    def with_stmt(self, node: cst.With) -> None:
        for item in node.items:
            taint = self.value(item.item)
            if item.asname is not None:
                self.bind(item.asname.name, taint)
        self.block(compound_blocks(node)[0], 0)

    def loop(self, node: cst.For | cst.While) -> None:
        lid = self.path
        is_for = isinstance(node, cst.For)
        header = self.value(node.iter) if is_for else self.value(node.test)
        # `while i < n: ...; i += 1` steps its counter as `for i in range(n)` steps its target, and
        # so does any loop that a test at the top of its body ends (`if i >= n: break`); a `while`
        # with none (`while True:`, a `next()` in the body), or a `for` that never runs out,
        # marks every name it binds
        counters = syntax.counters(node)
        step = EMPTY if is_for else header
        recording, self.recording = self.recording, False  # the body records its own tests
        for test in syntax.exit_tests(node)[0 if is_for else 1:] if counters else ():
            step |= self.value(test)
        self.recording = recording
        blanket = syntax.endless(node) and not counters
        entry = dict(self.env)
        label = ("iter", lid)
        self.loops += (lid,)
        if blanket:
            self.while_loops += (lid,)
        self.loop_entry.append(set(entry))
        body = compound_blocks(node)[0]
        passes = 2 if recording else 1
        saw_piece, self.saw_piece = self.saw_piece, False
        for n in range(passes):
            self.recording = recording and n == passes - 1
            for zeroed in self.zeroed.values():  # only a zero before the score in one iteration counts
                zeroed.discard(lid)
            if is_for:
                self.bind(node.target, operators.as_bytes(header) | {label})
            for name in counters:  # this iteration's position, not data kept from the last one
                self.env[name] = (self.env.get(name, EMPTY) - {("prev", lid)}) | step | {label}
            self.block(body, 0)
            last = self.env
            self.env = env.join(entry, env.back_edge(self.env, entry, lid))
        # After the loop, what its last iteration built from the scored tokens still holds them
        # (keys precomputed per n-gram order, read in a second loop): only the next iteration
        # sees them as context.
        self.env = {name: taint | {TARGET} if TARGET in last.get(name, EMPTY) else taint
                    for name, taint in self.env.items()}
        self.recording = recording
        if self.saw_piece:  # tokenizer pieces were read in the body: a byte table?
            table = shapes.piece_table_loop(node, lambda n: self.p.literal(self.rel, n))
            if table is not None:
                self.emit(Event("pieces", self.site(node), flags=frozenset(k for k, v in table.items() if v)))
        self.saw_piece = saw_piece or self.saw_piece
        self.loop_entry.pop()
        self.loops = self.loops[:-1]
        if blanket:
            self.while_loops = self.while_loops[:-1]
        if node.orelse is not None:
            self.block(compound_blocks(node)[1], 1)

    # --- binding and accumulating ---------------------------------------------------------------

    def bind(self, target: cst.BaseExpression, taint: Taint) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            self.tests.pop(name, None)
            if name in self.target_names:
                taint = taint | {TARGET}
            if self.while_loops:
                taint = taint | {("iter", lid) for lid in self.while_loops}
            self.env[name] = taint
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind(element.value, taint)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, taint)
        elif isinstance(target, cst.Attribute):
            if target.attr.value == "grad":
                self.grad = EMPTY  # `p.grad = None`: gradients cleared by hand
                self.cleared_grad = True
                return
            self.store_field(target.attr.value, taint)
            if not self.names_field(target):
                self.mutate(target.value, taint)
        elif isinstance(target, cst.Subscript):
            index = EMPTY
            for element in target.slice:
                if isinstance(element.slice, cst.Index):
                    index |= self.value(element.slice.value)
            span = operators.span(target, self.code)
            if span is not None:
                index |= {span}
            self.mutate(target.value, taint | index, written=target)

    def names_field(self, target: cst.Attribute) -> bool:
        """`Hyperparameters.train_files = ...`, or `args.train_files = ...` on an object of a class
        whose body binds `train_files`: the store is that attribute's (its field), as the binding in
        the class body is, not the whole class's or object's; otherwise every setting read from it
        would carry a data path's split. Data stored under a name the class does not declare
        (`self.cache = table`) still marks the object."""
        node = target.value
        if not isinstance(node, cst.Name):
            return False
        cls = self.fn.cls  # `self.val_files = ...` in a method of a class whose body declares it
        if cls is not None and self.fn.params[:1] == (node.value,) and target.attr.value in cls.settings:
            return True
        if node.value not in self.env:
            return isinstance(self.p.lookup(self.fn, node.value), ClassInfo)
        classes = [self.p.classes.get(label[2]) for label in kinds(self.env[node.value], "obj")]
        return bool(classes) and all(c is not None and target.attr.value in c.settings for c in classes)

    def mutate(self, obj: cst.BaseExpression, taint: Taint, written: cst.CSTNode | None = None) -> None:
        """`obj` now also holds `taint` (an append, `t[i] = v`, `self.x = v`, an in-place add)."""
        root = syntax.root_name(obj)
        if root is None:
            return
        # A parameter's own label is not data put into it: `self.w.data[i].mul_(1 / self.depth)`
        # scales a weight by the object's own setting (a weight's initialization), no fill.
        own = {("param", self.fn.params.index(root))} if root in self.fn.params else EMPTY
        put = taint - own
        held = self.env.get(root)
        if root not in self.fn.params and (held is None or any(label[0] == "state" for label in held)):
            self.use_stats(taint)  # written into trainable weights, or a name this function does not own
        if written is not None and has_data(put):
            taint = taint | {filled(self.site(written), put)}
        if self.fn.parent is not None and (root not in self.env or root in self.free_mutates) \
                and root not in self.fn.params:  # a name of the enclosing function
            self.free_mutates[root] = self.free_mutates.get(root, EMPTY) | taint
        self.env[root] = self.env.get(root, EMPTY) | taint
        if root in self.fn.params:
            i = self.fn.params.index(root)
            self.mutates[i] = self.mutates.get(i, EMPTY) | taint

    def descent(self, target, value_node, value: Taint, node) -> bool:
        """`bias = bias - lr * (probs - one_hot)`: a gradient worked out by hand from
        probabilities and data (no autograd), stepped on a tensor. An update of that tensor, as an
        optimizer's step would be."""
        if not syntax.descent_step(target, value_node) or PROB not in value or not has_data(value):
            return False
        made = frozenset({("state", None, "tensor")})  # a plain tensor, not a model's weights
        self.emit(Event("update", self.site(node), loss_data(value), made | {OPTIM}))
        self.bind(target, self.env.get(target.value, EMPTY) | loss_data(value))
        return True

    def _outer(self, name: str) -> bool:
        """Is `name` a running total here: a parameter, or bound before the innermost loop?"""
        if name in self.fn.params:
            return True
        if self.loop_entry:
            return name in self.loop_entry[-1]
        return self.fn.node is None

    def accumulation(self, target: cst.BaseExpression, value_node, value: Taint, node) -> None:
        """`total = total + nll` or `scores[i] = nll`: a score when a loss on data is kept in a
        running total."""
        root = syntax.root_name(target)
        if root is None:
            return
        if isinstance(target, cst.Name):
            if root not in {n.value for n in syntax.name_nodes(value_node)}:
                return
        self.score(root, value, node, summed=isinstance(target, cst.Name))

    def zero(self, target: cst.BaseExpression) -> None:
        """A total set to zero: in each enclosing loop it comes from outside of, what it holds
        after that loop is the last iteration's alone."""
        root = syntax.root_name(target)
        for lid, entry in zip(self.loops, self.loop_entry):
            if root is not None and root in entry:
                self.zeroed.setdefault(root, set()).add(lid)

    def score(self, root: str, value: Taint, node: cst.CSTNode, summed: bool = True) -> None:
        """A value on data kept in a running total (or in a parameter the caller passed): a score
        when the value is a loss or model output, which may only be known at the call site. A
        sum (`+=`, not an item stored, `scores[i] = nll`) zeroed earlier in an iteration of a loop
        keeps that loop's last iteration only (`order.later`)."""
        if self.fn.is_module_method:
            return  # a model's own bookkeeping (skip connections, auxiliary losses)
        if not has_data(value) or not self._outer(root):
            return
        zeroed = self.zeroed.get(root, ()) if summed else ()
        late = frozenset(order.later(self.fn, lid) for lid in self.loops if lid in zeroed)
        self.emit(Event("score", self.site(node), value, flags=late))

    def aug_assign(self, node: cst.AugAssign) -> None:
        value = self.value(node.value)
        self.note_slice(node.value)  # `h ^= t[j - (w - k)] * prime`: a context token hashed in
        target = node.target
        op = node.operator
        if isinstance(op, (cst.BitXorAssign, cst.BitAndAssign, cst.ModuloAssign,
                           cst.LeftShiftAssign, cst.RightShiftAssign)):
            value |= {HASH}
        if isinstance(node.value, cst.BinaryOperation) and isinstance(node.value.operator, cst.MatrixMultiply):
            if has_data(value):
                stat = ("calibstat", self.site(node))
                value |= {stat}
                self.emit(Event("calib", self.site(node), data_roots(value) | operators.gen(value),
                                frozenset({stat})))
        self.storing = True  # reading the target of `t[k] += v` is part of the write, not a lookup
        current = self.value(target)
        self.storing = False
        if GRAD in value:
            if any(label[0] == "state" for label in current):  # `p -= lr * p.grad`
                changed = frozenset(label for label in current if label[0] in ("state", "objref", "param"))
                self.emit(Event("update", self.site(node), loss_data(value | self.grad), changed | {OPTIM}))
            value = value - {GRAD}  # the parameter moved; it does not hold a gradient
        else:
            root = syntax.root_name(target)
            if root is not None:
                self.score(root, value, node)
        if isinstance(target, cst.Name):
            self.bind(target, current | value)
        elif isinstance(target, cst.Subscript):
            self.mutate(target.value, value, written=target)
        elif isinstance(target, cst.Attribute):
            self.store_field(target.attr.value, value)
            self.mutate(target.value, value)

    # --- expressions ---------------------------------------------------------------------------

    def value(self, node: cst.BaseExpression) -> Taint:
        method = _DISPATCH.get(type(node))
        if method is None:
            return EMPTY
        return method(self, node)

    def v_name(self, node: cst.Name) -> Taint:
        name = node.value
        if name in self.env:
            return self.env[name]
        found = self.p.lookup(self.fn, name)
        if isinstance(found, Function):
            self.reach(found.key)
            return frozenset({("fn", found.key)})
        if isinstance(found, ClassInfo):
            return frozenset({("cls", f"{found.script.rel}:{found.name}")})
        scope = self.fn.parent
        while scope is not None:  # a closure reads its enclosing function's names as they are now
            outer = self.a.active.get(scope.key)
            if outer is not None and name in outer.env:
                return enclosed(env.without_loops(outer.env[name]), scope)
            scope = scope.parent
        module = self.a.modules.get(self.rel)  # a global, as the module body has set it so far
        if module is not None and module is not self:
            return module.env.get(name, EMPTY)
        return EMPTY

    def v_attribute(self, node: cst.Attribute) -> Taint:
        attr = node.attr.value
        if attr in apis.SIZE_ATTRS:
            self.value(node.value)
            return EMPTY
        if attr == "grad":
            return self.value(node.value) | self.grad | {GRAD}
        qualified = self.p.qualified(self.rel, node)
        if qualified is not None:
            shipped = self.p.resolve(qualified)  # `h.score` passed as a value
            if isinstance(shipped, Function):
                self.reach(shipped.key)
                return frozenset({("fn", shipped.key)})
            if isinstance(shipped, ClassInfo):
                return frozenset({("cls", f"{shipped.script.rel}:{shipped.name}")})
            return EMPTY
        base = self.value(node.value)
        if attr in ("data", "T", "mT", "real"):
            return base
        from audits.legality import calls
        bound = calls.bound_method(self, base, attr)
        if bound:  # `timed_eval(evaluator.run, ...)`: the method, its object passed when called
            return bound
        return base | self.a.fields.get(attr, EMPTY)

    def v_subscript(self, node: cst.Subscript) -> Taint:
        base = self.value(node.value)
        index = EMPTY
        by_target = True  # every index element is the scored token (`t[y]`, not `t[prev, y]`)
        key = EMPTY  # the hashed elements: `h` of `t[h, y]`, whose row the scored token picks from
        for element in node.slice:
            s = element.slice
            part_taint = EMPTY
            if isinstance(s, cst.Index):
                part_taint = self.value(s.value)
            elif isinstance(s, cst.Slice):
                for part in (s.lower, s.upper, s.step):
                    if part is not None:
                        part_taint |= self.value(part)
            index |= part_taint
            by_target = by_target and TARGET in part_taint
            key |= part_taint if HASH in part_taint else EMPTY
        taint = base | index
        taint = self.drawn(node, base, index, taint)
        if shapes.previous_positions(node):
            spelled = imports.dotted(node.value)
            if spelled is not None:
                taint |= {("shift", spelled)}
                self.shifted[spelled] = self.shifted.get(spelled, EMPTY) | base
        if id(node) in self.target_nodes:
            taint |= {TARGET}
        if kinds(base, "loss") or PROB in base or MODEL in base:
            span = operators.span(node, self.code)
            if span is not None:
                taint |= {span}
        if HASH in key and has_data(key) and not self.storing:
            # A row picked by a hashed context and a column by the scored token (`t[h, y]`) reads
            # the target's entry of that context's row: the key is the hashed element alone.
            self.emit(Event("lookup", self.site(node), key, base, flags=frozenset(
                {"module"} if self.fn.is_module_method else set())))
        if by_target and HASH not in index \
                and not (kinds(base, "loss") or PROB in base or MODEL in base or TARGET in base):
            taint |= {("gate", self.site(node), "lookup")}  # a table indexed by the scored token
        return taint

    def drawn(self, node: cst.Subscript, base: Taint, index: Taint, taint: Taint) -> Taint:
        """Data (validation tokens, once the callers are known) read at positions drawn at
        random (`val[starts]` with `starts` from `torch.randint`, a slice starting at a random
        offset, `perm[:k]` of a permutation cut short) is a sample of the split, not every token
        of it: ("drawn", where the positions were drawn)."""
        if kinds(base, "perm") and any(_cut_short(e.slice) for e in node.slice):
            taint |= {("random", self.site(node))}  # a permutation cut short: a random subset
            if as_read(base) and not kinds(base, "drawn"):
                return taint | {("drawn", self.site(node))}  # the data itself shuffled, then cut
        draws = kinds(index, "random")
        if not draws or computed(index) or not as_read(base) or kinds(base, "drawn"):
            return taint
        first = min(draws, key=lambda label: _line(label[1])) if len(draws) > 1 else draws[0]
        return taint | {("drawn", first[1])}

    def v_binary(self, node: cst.BinaryOperation) -> Taint:
        left, right = self.value(node.left), self.value(node.right)
        taint = env.derived(left | right)
        op = node.operator
        if isinstance(op, (cst.BitXor, cst.LeftShift, cst.RightShift)):
            taint |= {HASH} | keyed(left | right, self.site(node))
        elif isinstance(op, cst.Multiply) and (operators.big_int(node.left) or operators.big_int(node.right)):
            taint |= {HASH} | keyed(left | right, self.site(node))
        # `& mask` and `% size` keep a hash in range; alone they only wrap an index around
        elif isinstance(op, (cst.BitAnd, cst.Modulo)) and HASH in taint:
            taint |= {HASH}
        elif isinstance(op, cst.MatrixMultiply):
            taint |= {STAT}
        elif isinstance(op, cst.Power) and kinds(right, "gate"):  # p ** (1 / n_bytes[target])
            taint = operators.as_bytes(taint)
        if isinstance(op, (cst.Add, cst.Subtract)) and self.fixed_boost(
                operators.tilt_normalizer(node, self.code, self.boost_names)):
            taint |= {NORM}
        if isinstance(op, cst.Divide):
            self.normalizer(right)
            taint -= operators.counted_gates(right, left)
            if operators.additive_smoothing(node) and has_data(left):
                self.emit(Event("smoothing", self.site(node), taint))
        if isinstance(op, (cst.Multiply, cst.Add, cst.Subtract, cst.Divide)):
            taint |= operators.gated(left, right)
            if operators.tilts(left, right) or operators.tilts(right, left):
                self.tilts.append(node)
            taint = self.bits_per_byte(node, op, left, taint)
        if isinstance(op, (cst.Subtract, cst.Divide)) and left and right \
                and kinds(pick(self.site(node), (left, right)), "select"):
            taint |= {("contrast", self.site(node))}  # two passes' losses set against each other
        if isinstance(op, cst.Add):
            taint = self.previous_token_mix(node, left, right, taint)
        return taint

    def bits_per_byte(self, node: cst.BinaryOperation, op, left: Taint, taint: Taint) -> Taint:
        """A loss turned into bits (divided by ln 2, or times log2 e) is marked; where bits are
        divided by a fixed bytes-per-token ratio instead of a count of bytes (`bits / 3.7`,
        `loss / (math.log(2) * BPT)`, `loss * 0.27 / math.log(2)`, `bits / (n_tokens * 3.7)`), a
        "ratio" event. A helper's parameter may be the loss: the event's taint is known at its
        calls."""
        lossy = kinds(left, "loss") or any(label[0] in ("param", "enclosing") for label in left)
        if isinstance(op, cst.Divide) and lossy and operators.is_ln2(node.right):
            taint |= {("bits",)}
            if operators.scaled_by_ratio(node.left, self.p, self.fn):
                self.emit(Event("ratio", self.site(node), left))
        elif isinstance(op, cst.Multiply) and lossy and operators.is_log2e(node.right, self.p, self.fn):
            taint |= {("bits",)}  # loss * 1.4427: the same bits
        elif isinstance(op, cst.Divide) and lossy and operators.ratio_with_ln2(node.right, self.p, self.fn):
            self.emit(Event("ratio", self.site(node), left))
        elif isinstance(op, (cst.Divide, cst.Multiply)) and ("bits",) in left \
                and operators.bytes_ratio(node.right, self.p, self.fn):
            self.emit(Event("ratio", self.site(node), left))
        elif isinstance(op, cst.Divide) and ("bits",) in left \
                and operators.ratio_factor(operators.factors(node.right), self.p, self.fn):
            self.emit(Event("ratio", self.site(node), left))  # bits / (n_tokens * 3.7)
        return taint

    def previous_token_mix(self, node, left: Taint, right: Taint, taint: Taint) -> Taint:
        """`x + g * x_prev` where x_prev holds x shifted one position (x[:, :-1]): the position
        after a document's end reads that document's last token unless a BOS mask stops it.
        The event's taint is what the mixed-in term adds to the shifted value (its gate, a mask),
        in terms of this function's parameters: a mask that earlier layers left in the value
        itself stops nothing here, and one a caller passes in is known at its call."""
        for shifted, other_node in ((right, node.left), (left, node.right)):
            for label in kinds(shifted, "shift"):
                if shapes.mentions(other_node, label[1]):
                    added = shifted - self.shifted.get(label[1], EMPTY)
                    self.emit(Event("mix", self.site(node), added, detail=label[1]))
                    return frozenset(label for label in taint if label[0] != "shift")
        return taint

    def v_unary(self, node: cst.UnaryOperation) -> Taint:
        return self.value(node.expression)

    def v_boolean(self, node: cst.BooleanOperation) -> Taint:
        return self.value(node.left) | self.value(node.right)

    def v_comparison(self, node: cst.Comparison) -> Taint:
        left = self.value(node.left)
        taint = env.derived(left)
        for comp in node.comparisons:
            right = self.value(comp.comparator)
            taint |= env.derived(right)
            if isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
                if has_data(left | right):  # a test of the tokens: a mask of positions
                    taint |= {("mask", self.site(node))}
                for target, other in ((left, right), (right, left)):
                    if operators.may_be_stored(target, other):
                        self.emit(Event("stored", self.site(node), other, target))
                if operators.is_target_vs_hint(left, right) or operators.is_target_vs_hint(right, left) \
                        or self.loss_target_vs_gathered(node.left, comp.comparator):
                    taint |= {INDICATOR}
                elif TARGET in left or TARGET in right:
                    taint |= {("gate", self.site(node), "compare")}
            elif TARGET in left or TARGET in right:
                taint |= {("gate", self.site(node), "compare")}
            # Against a constant, a threshold on one value picks nothing between two passes, unless
            # that value sets two passes' losses against each other (`nll_a - nll_b < 0`).
            if (left and right) or kinds(left | right, "contrast"):
                taint |= pick(self.site(node), (left, right), self.switched)
        # Whether a table held an entry (`total > 0`) is no key: positions picked by it, and the
        # scored tokens at them, are not hashed (their reads are not lookups by a hashed key).
        return frozenset(label for label in taint if label != HASH and label[0] != "keyed")

    def loss_target_vs_gathered(self, left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
        """`targets == hint_ids` where `targets` is a loss's target and `hint_ids` only a gather's
        index (the hint's probability read for a tilt's normalizer): the scored token against a
        hint, not the scored token against itself."""
        sides = [{n.value for n in syntax.name_nodes(side)} for side in (left, right)]
        scored = [bool(names & self.loss_targets) for names in sides]
        return scored[0] != scored[1] and all(names & self.target_names for names in sides)

    def v_ifexp(self, node: cst.IfExp) -> Taint:
        test = self.value(node.test)
        taint = self.value(node.body) | self.value(node.orelse)
        return taint | operators.condition(test, taint)

    def v_collection(self, node) -> Taint:
        taint = EMPTY
        for element in node.elements:
            taint |= self.value(element.value)
        return taint

    def v_dict(self, node: cst.Dict) -> Taint:
        taint = EMPTY
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                taint |= self.value(element.key) | self.value(element.value)
            else:
                taint |= self.value(element.value)
        return taint

    def v_comprehension(self, node) -> Taint:
        saved = dict(self.env)
        taint = EMPTY
        comp = node.for_in
        while comp is not None:
            source = self.value(comp.iter)
            self.bind(comp.target, operators.as_bytes(source))
            for cond in comp.ifs:
                self.value(cond.test)
            comp = comp.inner_for_in
        if isinstance(node, cst.DictComp):
            taint |= self.value(node.key) | self.value(node.value)
        else:
            taint |= self.value(node.elt)
        self.env = saved
        return taint

    def v_string(self, node) -> Taint:
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            return operators.string_taint(value) if isinstance(value, str) else EMPTY
        if isinstance(node, cst.ConcatenatedString):  # "a" "b" "c": a chain, walked in a loop
            taint = EMPTY                                 # (thousands of parts in a payload)
            while isinstance(node, cst.ConcatenatedString):
                taint |= self.value(node.left)
                node = node.right
            return taint | self.value(node)
        text, taint = "", EMPTY
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                text += part.value
            else:
                taint |= self.value(part.expression)
                text += "*"
        # a loss or a model's output formatted into text is a message (a log line, a report), no
        # longer a score; what the text names (a data path, the tokens in a key) it keeps
        taint = frozenset(label for label in taint if label[0] != "loss" and label not in (MODEL, PROB)
                          and label[0] != "out")
        return taint | operators.string_taint(text)

    def v_passthrough(self, node) -> Taint:
        return self.value(node.value) if getattr(node, "value", None) is not None else EMPTY

    def v_yield(self, node: cst.Yield) -> Taint:
        self.other_return = True
        if isinstance(node.value, cst.BaseExpression):
            self.returns |= self.value(node.value)
        return EMPTY

    def v_named(self, node: cst.NamedExpr) -> Taint:
        taint = self.value(node.value)
        self.bind(node.target, taint)
        return taint

    def v_lambda(self, node: cst.Lambda) -> Taint:
        """A lambda is walked where it is written, its parameters unknown: what its body calls
        runs when the lambda is called (`timed("eval", lambda: eval_val(model, val_tokens))`),
        with the values its closure sees here. Its value carries nothing."""
        saved = dict(self.env)
        for param in node.params.params:
            self.env[param.name.value] = EMPTY
        self.value(node.body)
        self.env = saved
        return EMPTY

    # --- calls -----------------------------------------------------------------------------------

    def v_call(self, node: cst.Call) -> Taint:
        from audits.legality import calls
        return calls.call(self, node)


_DISPATCH = {
    cst.Name: FunctionWalk.v_name,
    cst.Attribute: FunctionWalk.v_attribute,
    cst.Subscript: FunctionWalk.v_subscript,
    cst.BinaryOperation: FunctionWalk.v_binary,
    cst.UnaryOperation: FunctionWalk.v_unary,
    cst.BooleanOperation: FunctionWalk.v_boolean,
    cst.Comparison: FunctionWalk.v_comparison,
    cst.IfExp: FunctionWalk.v_ifexp,
    cst.Tuple: FunctionWalk.v_collection,
    cst.List: FunctionWalk.v_collection,
    cst.Set: FunctionWalk.v_collection,
    cst.Dict: FunctionWalk.v_dict,
    cst.ListComp: FunctionWalk.v_comprehension,
    cst.SetComp: FunctionWalk.v_comprehension,
    cst.GeneratorExp: FunctionWalk.v_comprehension,
    cst.DictComp: FunctionWalk.v_comprehension,
    cst.SimpleString: FunctionWalk.v_string,
    cst.ConcatenatedString: FunctionWalk.v_string,
    cst.FormattedString: FunctionWalk.v_string,
    cst.Await: FunctionWalk.v_passthrough,
    cst.Yield: FunctionWalk.v_yield,
    cst.StarredElement: FunctionWalk.v_passthrough,
    cst.NamedExpr: FunctionWalk.v_named,
    cst.Lambda: FunctionWalk.v_lambda,
    cst.Call: FunctionWalk.v_call,
}


def _line(site: Site) -> int:
    at = site.position()
    return at.start.line if at else 0


def _cut_short(s) -> bool:
    """`[:k]`: the first k items, not the end trimmed by a constant (`[:-1]`, a shift)."""
    if not isinstance(s, cst.Slice) or s.upper is None or (s.lower is not None and syntax.number(s.lower) != 0):
        return False
    upper = syntax.number(s.upper)
    return upper is None or upper > 0
