"""What a call does to the values flowing through it: library APIs by their meaning (apis.py),
local functions and methods by replaying their summaries, everything else by passing the data of
its arguments (and of the object it is called on) to its result."""

from __future__ import annotations

import dataclasses

import libcst as cst

from audits.legality import apis, env, operators, printed, shapes, syntax
from audits.legality.program import ClassInfo, Function
from audits.legality.values import (
    BLOB, EMPTY, GEN, GRAD, HASH, HOOK, LOADED, LOCAL_KINDS, LOSSFN, MODEL, NORM, OPTIM, PROB, READ,
    RELOCATED_KINDS, STAT, TARGET, TRAIN, Event, Site, Taint, as_read, data_roots, has_data, keyed, kinds,
    judged, loss_data, objref, pick, substitute,
)
from audits.submission import runsettings

_SILENT = {"print", "super", "setattr", "delattr", "vars", "locals", "globals", "exec", "eval",
           "input", "format", "repr", "ord", "chr"}


class Arg:
    __slots__ = ("keyword", "star", "taint", "node")

    def __init__(self, keyword, star, taint, node):
        self.keyword, self.star, self.taint, self.node = keyword, star, taint, node


def call(w, node: cst.Call) -> Taint:
    args = [Arg(a.keyword.value if a.keyword else None, a.star, w.value(a.value), a.value)
            for a in node.args]
    func = node.func
    message = printed.pattern(node, w.code) if w.recording else None
    if message is not None:
        w.prints.append((*message, w.switched))
    result = None
    qualified = w.p.qualified(w.rel, func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    shipped = w.p.resolve(qualified) if qualified is not None else None
    if isinstance(shipped, Function):  # a function of a shipped module, however imported
        result = apply(w, node, shipped, args)
    elif isinstance(shipped, ClassInfo):
        result = instantiate(w, node, shipped, args)
    elif qualified is not None:
        result = library_call(w, node, qualified, args)
        if qualified == "dataclasses.field":  # `field(default_factory=Cfg)` builds a Cfg
            result |= _default_factory(w, node, args)
    elif isinstance(func, cst.Name) and func.value not in w.env:
        found = w.p.lookup(w.fn, func.value)
        if isinstance(found, Function):
            result = apply(w, node, found, args)
        elif isinstance(found, ClassInfo):
            result = instantiate(w, node, found, args)
        else:
            result = builtin(w, node, func.value, args)
    elif isinstance(func, cst.Attribute):
        result = method_call(w, node, func, args)
    else:
        result = value_call(w, node, w.value(func), args)
    _callbacks(w, node, args)
    return result


def _relocated(taint: Taint, call: Site, closure: Function) -> Taint:
    """What a closure put into a name of its enclosing function, seen there: the places it made
    moved to the call; its data, written through the enclosing function's own names, keeps their
    labels (their parameters are the enclosing function's, not the closure's)."""
    out = set()
    for label in taint:
        if label[0] == "filled" and label[1].fn is closure:  # its data: this function's parameters
            data = frozenset(("param", d[2]) if d[0] == "enclosing" and d[1] == call.fn.key else d
                             for d in label[3])
            out.add(("filled", label[1].moved(call), label[2], data))
        elif label[0] in RELOCATED_KINDS and label[1] is not None and label[1].fn is closure:
            out.add((label[0], label[1].moved(call)) + label[2:])
        elif label[0] not in LOCAL_KINDS:
            out.add(label)
    return frozenset(out)


def _default_factory(w, node: cst.Call, args: list[Arg]) -> Taint:
    factory = _arg(args, 99, "default_factory")
    if factory is None or not isinstance(factory.node, cst.Name):
        return EMPTY
    found = w.p.lookup(w.fn, factory.node.value)
    if isinstance(found, ClassInfo):
        return instantiate(w, node, found, [])
    if isinstance(found, Function):
        return apply(w, node, found, [])
    return EMPTY


def _union(args: list[Arg]) -> Taint:
    taint = EMPTY
    for arg in args:
        taint |= arg.taint
    return taint


def _arg(args: list[Arg], position: int, keyword: str | None) -> Arg | None:
    positional = [a for a in args if a.keyword is None and not a.star]
    if keyword is not None:
        for a in args:
            if a.keyword == keyword:
                return a
    return positional[position] if position < len(positional) else None


def _mark_target(w, arg: Arg | None, of_loss: bool = False) -> None:
    """The expression passed as the targets of a loss or the index of a gather holds the tokens
    being scored (a gather may also read a hint's probability: see FunctionWalk.loss_targets)."""
    if arg is None:
        return
    expr = shapes.strip_carriers(arg.node)
    while isinstance(expr, cst.Subscript):
        expr = shapes.strip_carriers(expr.value)
    if isinstance(expr, cst.Name):
        w.discovered.add(expr.value)
        if of_loss:
            w.loss_targets.add(expr.value)


def _select(w, node, operands: list[tuple], reduces: bool) -> Taint:
    """min/max over losses from different passes: the better one picked with the true token.
    `operands`: (expression, taint) of each positional argument, a method's receiver first. Where
    the call reduces over an axis (`torch.min(x, 0)`, `x.max(1)`), a number after the first is the
    axis; any other constant operand makes it a clamp (`np.maximum(p, 1e-10)`, `min(n - 1, 14)`),
    which keeps the value or the bound, never one pass's loss over another's."""
    parts = []
    for i, (expr, taint) in enumerate(operands):
        constant = not taint or syntax.number(expr) is not None
        if constant and reduces and i > 0:
            continue
        if constant:
            return EMPTY
        parts.append(taint)
    return pick(w.site(node), parts, w.switched)


def _operands(args: list[Arg]) -> list[tuple]:
    return [(arg.node, arg.taint) for arg in args if not arg.keyword]


def _picked(w, node, taint: Taint) -> None:
    """Losses picked per token by the outcome, summed up: the figure a score reports, whether or
    not it is kept in a running total (`total = keep_lower(first, second).sum()`)."""
    if kinds(taint, "select") and TARGET in taint:
        w.emit(Event("picked", w.site(node), taint))


def library_call(w, node: cst.Call, name: str, args: list[Arg]) -> Taint | None:
    union = _union(args)
    site = w.site(node)
    if name in apis.ENV_READS:
        return union | _env_flag(w, args)
    if name in apis.LOSS_CALLS:
        if name in apis.NORMALIZER_CALLS:
            w.normalizer(union)
            if name.endswith("log1p") and args and w.fixed_boost(
                    operators.tilt_excess(args[0].node, w.boost_names)):
                w.normalizer(frozenset({NORM}))  # log1p(p * (exp(beta) - 1)) is log Z
        target = apis.LOSS_CALLS[name]
        if target is not None:
            _mark_target(w, _arg(args, *target), of_loss=True)
        # a loss of logits made with a hand-stepped delta is a loss, not a gradient
        return (union - {GRAD}) | {("loss", site)}
    if name in apis.GATHER_CALLS:
        _mark_target(w, _arg(args, *apis.GATHER_CALLS[name]))
        return union
    if name in apis.EQUALITY_CALLS:
        return env.derived(union) | ({("mask", site)} if has_data(union) else EMPTY)
    if name in apis.SPREAD_CALLS and len(args) >= 2:
        return union | judged("spread", site, (args[0].taint, args[1].taint))
    if name in apis.PROB_CALLS:
        return union | {PROB}
    if name in apis.SELECT_CALLS:
        return union | _select(w, node, _operands(args), name in apis.AXIS_SELECT_CALLS)
    if name in apis.WHERE_CALLS:
        if len(args) == 3:
            rest = args[1].taint | args[2].taint
            return union | operators.condition(args[0].taint, rest) | operators.gated(args[0].taint, rest)
        return union
    if name in apis.SAMPLE_CALLS:
        return union | {GEN}
    if name in apis.RANDOM_CALLS:
        return union | _drawn(name, args, site)
    if name in apis.PERMUTATION_CALLS:
        return union | {("perm", site)}
    if name in apis.SHUFFLE_CALLS and args:
        w.mutate(args[0].node, frozenset({("perm", site)}))  # shuffled in place: every item, in another order
        return EMPTY
    if name in apis.GENERATOR_CALLS:
        return frozenset({("rng",)})
    if name in apis.MODULE_LOADERS:
        return union | {LOADED}
    if name in apis.CREATE_CALLS:
        made = union if name in apis.COPY_CALLS else EMPTY
        grad = _arg(args, 99, "requires_grad")
        flag = w.p.literal(w.rel, grad.node) if grad is not None else None
        if isinstance(flag, cst.Name) and flag.value == "True":
            made |= {("state", site, "tensor")}
        return made
    if name in apis.PARAMETER_CALLS:
        return union | {("state", site, "tensor")}
    if name == "copy.deepcopy" and args:
        return _fresh_copy(args[0].taint, site)
    if apis.is_optimizer(name):
        return union | {OPTIM}
    if name in apis.AUTOGRAD_GRAD:
        first = args[0].taint if args else EMPTY
        w.emit(Event("backward", site, first))
        return first | {GRAD}
    if name in apis.LOSS_MODULES:
        return frozenset({LOSSFN})
    if name in apis.HASH_CALLS:
        return union | {HASH} | keyed(union, site)
    if name in apis.REDUCE_CALLS:
        _picked(w, node, union)
        return union | {STAT}
    if name in apis.DECOMPRESS_CALLS:
        return union | {BLOB} | (EMPTY if kinds(union, "unpacked") else {("unpacked", site)})
    if name in apis.SERIALIZE_CALLS:
        for arg in args:
            _sink(w, node, name, arg.taint)
        return union
    if name in apis.DESERIALIZE_CALLS:
        return union | {READ}
    if name in apis.ARRAY_LOAD_CALLS:
        w.emit(Event("array_file", site, detail=name))
        return union
    if name in apis.NETWORK_CALLS:
        w.emit(Event("net", site, detail=name))
        return union
    if name in apis.SHELL_CALLS:
        if any(word in w.code(arg.node) for arg in args for word in apis.NETWORK_WORDS):
            w.emit(Event("net", site, detail=name))
        return union
    if name in apis.MUTATE_CALLS and args:
        w.mutate(args[0].node, _union(args[1:]), written=args[0].node)
        return EMPTY
    if name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper():
        made = frozenset({("obj", site, name)})  # a layer or module: its own identity, no data
        if name in apis.MODULE_CONTAINERS:  # and the modules it holds, which it runs
            made |= frozenset(label for label in union if label[0] == "obj")
        return made
    return union


def _drawn(name: str, args: list[Arg], site) -> Taint:
    """A random draw: numbers in bounds (`randint(0, n)`, positions), or items of the data itself
    (`random.sample(docs, k)`, `np.random.choice(windows, k)`), which are then a sample of it."""
    first = args[0] if args and not args[0].keyword else None
    if name in apis.ITEM_DRAWS and first is not None and as_read(first.taint):
        return frozenset({("random", site), ("drawn", site)})
    return frozenset({("random", site)})


def _env_flag(w, args: list[Arg]) -> Taint:
    """`os.environ.get("SLOT_ENABLED", "0")`: a setting, on or off unless the variable is set.
    In a helper that reads the variable its caller names (`def env_bool(name, default)`), the
    setting is named at each call (`settings_named`)."""
    key = w.p.literal(w.rel, args[0].node) if args else None
    if not isinstance(key, cst.SimpleString):
        return _env_named_by_caller(w, args)
    on = _default_on(w, args[1].node) if len(args) > 1 else None
    if on is None:
        return EMPTY
    flag = ("flag", key.evaluated_value, on)
    default = w.p.literal(w.rel, args[1].node)
    if isinstance(default, cst.SimpleString) and runsettings.mode_word(default.evaluated_value):
        return frozenset({flag, ("mode", key.evaluated_value, default.evaluated_value)})
    return frozenset({flag})


def _default_on(w, node) -> bool | None:
    """Is a setting's default (a literal) on? None where it is not a literal."""
    if node is None:
        return None
    default = w.p.literal(w.rel, node)
    if isinstance(default, cst.SimpleString):
        return str(default.evaluated_value).strip().lower() not in ("", "0", "false", "no", "off")
    if isinstance(default, (cst.Integer, cst.Float)):
        return default.evaluated_value != 0
    if isinstance(default, cst.Name) and default.value in ("True", "False", "None"):
        return default.value == "True"
    return None


def _env_named_by_caller(w, args: list[Arg]) -> Taint:
    """("envname", i, default): the variable named by parameter i; its default a literal
    ("on", bool), another parameter ("param", j), or, where the read gives none, the parameter
    after the name's (`os.environ.get(name)`, then `return default` when unset)."""
    params = list(w.fn.params)
    if not args or not isinstance(args[0].node, cst.Name) or args[0].node.value not in params:
        return EMPTY
    i = params.index(args[0].node.value)
    if len(args) < 2:
        return frozenset({("envname", i, ("param", i + 1))})
    node = args[1].node
    if isinstance(node, cst.Name) and node.value in params:
        return frozenset({("envname", i, ("param", params.index(node.value)))})
    on = _default_on(w, node)
    return EMPTY if on is None else frozenset({("envname", i, ("on", on))})


def settings_named(w, taint: Taint, nodes: list) -> Taint:
    """A helper's "envname" labels at its call: the setting the call names, with its default."""
    named = kinds(taint, "envname")
    if not named:
        return taint
    out = set(taint) - set(named)
    for _, i, (how, value) in named:
        key = w.p.literal(w.rel, nodes[i]) if i < len(nodes) and nodes[i] is not None else None
        if not isinstance(key, cst.SimpleString):
            continue
        on = value if how == "on" else _default_on(w, nodes[value] if value < len(nodes) else None)
        if on is not None:
            out.add(("flag", key.evaluated_value, on))
    return frozenset(out)


def _sink(w, node, api: str, taint: Taint) -> None:
    """Data written into the artifact: tokens, not scores or statistics. A model's weights
    written out are the artifact itself (an export): what runs after it runs at evaluation."""
    w.use_stats(taint)
    if operators.written_data(taint):
        w.emit(Event("sink", w.site(node), taint, detail=api))
    elif api in apis.SERIALIZE_CALLS and any(label[0] in ("obj", "objref", "state") for label in taint):
        w.emit(Event("export", w.site(node), detail=api))


def builtin(w, node: cst.Call, name: str, args: list[Arg]) -> Taint:
    union = _union(args)
    if name in apis.SIZE_CALLS:
        return EMPTY
    if name in ("min", "max"):  # of one iterable, or pairwise
        return union | _select(w, node, _operands(args), False)
    if name == "sum":
        _picked(w, node, union)
        return union | {STAT}
    if name == "hash":
        return union | {HASH}
    if name == "next":  # an element of what is iterated, as a `for` target takes one
        return operators.as_bytes(union)
    if name in ("float", "int", "bool"):
        return union
    if name == "getattr" and len(args) >= 2 and isinstance(args[1].node, cst.SimpleString):
        # getattr(args, "slot_enabled", False): the attribute, by its literal name
        return args[0].taint | w.a.fields.get(args[1].node.evaluated_value, EMPTY) | _union(args[2:])
    if name in _SILENT:
        return EMPTY
    return union


def method_call(w, node: cst.Call, func: cst.Attribute, args: list[Arg]) -> Taint:
    name = func.attr.value
    receiver_node = func.value
    if isinstance(receiver_node, cst.Call) and isinstance(receiver_node.func, cst.Name) \
            and receiver_node.func.value == "super":
        return EMPTY
    receiver = w.value(receiver_node)
    union = _union(args)
    site = w.site(node)
    if name in apis.SIZE_METHODS:
        return EMPTY
    if name not in _PROTOCOL_METHODS:
        # `sampler.sample(...)` of the script's own class: what it does, not what the name
        # usually means
        own = _own_methods(w, receiver_node, receiver, name, optimizers=False)
        if own:
            return _run_methods(w, node, own, args, receiver, receiver_node, union)
    if name == "backward":
        w.grad |= receiver
        w.emit(Event("backward", site, receiver))
        return EMPTY
    if name == "step" and (OPTIM in receiver or kinds(receiver, "param")):
        # an optimizer, or a parameter that may turn out to be one at the call site; a closure
        # it is given (L-BFGS) runs first: its backward passes are what the step trains on
        for arg in args:
            for fn in filter(None, (_function(w, label[1]) for label in arg.taint if label[0] == "fn")):
                apply(w, node, fn, [])
        flags = frozenset() if w.cleared_grad else frozenset({"consumes"})
        w.emit(Event("update", site, loss_data(w.grad), _state(receiver), flags=flags))
        if OPTIM in receiver:
            return EMPTY
    if name == "get" and args and not args[0].keyword and HASH in args[0].taint and has_data(args[0].taint):
        # `counts.get(key, 0)`: a table read at a hashed key, as `counts[key]` is
        w.emit(Event("lookup", site, args[0].taint, receiver, flags=frozenset(
            {"module"} if w.fn.is_module_method else set())))
    if name == "zero_grad":
        w.grad = EMPTY
        w.cleared_grad = True
        return EMPTY
    if name in ("parameters", "named_parameters"):
        return frozenset({("state", None, "module")}) | objref(receiver)
    if name == "requires_grad_":
        if kinds(receiver, "state"):
            return receiver
        made = frozenset({("state", site, "tensor")})  # `b = bias.clone().requires_grad_()`
        w.mutate(receiver_node, made)
        return receiver | made
    if name in apis.HOOK_METHODS:
        w.hooks = True
        _hook_statistics(w, node, args)
        return frozenset({HOOK})
    if name in apis.SERIALIZE_METHODS:
        stored = _arg(args, apis.SERIALIZE_METHODS[name], None)
        kept = not any(arg.keyword == "persistent" and isinstance(arg.node, cst.Name)
                       and arg.node.value == "False" for arg in args)  # not in the state dict
        if stored is not None and kept:
            _sink(w, node, name, stored.taint)
        return EMPTY
    if name in apis.LOSS_METHODS:
        if name in apis.NORMALIZER_METHODS:
            w.normalizer(receiver | union)
            if name == "log1p" and w.fixed_boost(operators.tilt_excess(receiver_node, w.boost_names)):
                w.normalizer(frozenset({NORM}))  # (p * (exp(beta) - 1)).log1p() is log Z
        return receiver | union | {("loss", site)}
    if name in apis.SPREAD_METHODS and args:
        return receiver | union | judged("spread", site, (receiver, args[0].taint))
    if name in apis.PROB_METHODS:
        return receiver | union | {PROB}
    if name in apis.GATHER_METHODS:
        _mark_target(w, _arg(args, *apis.GATHER_METHODS[name]))
        return receiver | union
    if name in apis.EQUALITY_METHODS:
        taint = env.derived(receiver | union)
        return taint | ({("mask", site)} if has_data(taint) else EMPTY)
    if name in apis.SAMPLE_METHODS:
        return receiver | union | {GEN}
    if name in apis.RANDOM_METHODS and ("rng",) in receiver:
        return union | _drawn(name, args, site)
    if name in apis.SHUFFLE_METHODS and ("rng",) in receiver and args:
        w.mutate(args[0].node, frozenset({("perm", site)}))
        return EMPTY
    if name in apis.PERMUTATION_METHODS and ("rng",) in receiver:
        return union | {("perm", site)}
    if name in apis.PIECE_METHODS or name in apis.BYTE_METHODS:
        w.saw_piece = w.saw_piece or name in apis.PIECE_METHODS
        taint = receiver | union
        return taint | ({("bytes", site)} if TARGET in taint else EMPTY)
    if name in apis.SELECT_METHODS:
        taint = receiver | union
        return taint | _select(w, node, [(receiver_node, receiver)] + _operands(args),
                               name in apis.AXIS_SELECT_METHODS)
    if name in apis.REDUCE_METHODS:
        _picked(w, node, receiver)
        return receiver | union | {STAT}
    if name in apis.MUTATORS:
        root = _root(receiver_node)
        if isinstance(receiver_node, cst.Attribute) and receiver_node.attr.value in w.p.buffers:
            # Written into a buffer the model's state dict keeps: stored in the artifact with the
            # weights, the legal home of tables built from training data.
            union = union - {TRAIN}
        if GRAD in union:  # `p.add_(p.grad, alpha=-lr)`
            if kinds(receiver, "state"):
                w.emit(Event("update", site, loss_data(union | w.grad), _state(receiver) | {OPTIM}))
            union = union - {GRAD}
        elif root is not None and name in ("append", "extend", "add_", "copy_", "index_add_",
                                           "scatter_add_", "index_copy_"):
            w.score(root, union, node)
        written = receiver_node if name not in ("append", "extend", "update") else None
        w.mutate(receiver_node, union, written=written)
        return receiver | union
    if name == "load_state_dict" and _whole_state(w, args):
        # every parameter and buffer overwritten: what training had put in the weights is gone
        w.mutate(receiver_node, frozenset({("reloaded", site)}))
        return EMPTY
    candidates = _methods(w, receiver_node, receiver, name)
    if candidates:
        return _run_methods(w, node, candidates, args, receiver, receiver_node, union)
    held = frozenset(label for label in w.a.fields.get(name, EMPTY)
                     if label[0] == "obj" and label[2] in w.p.classes)
    if held:  # `self.smear(x, mask)`: a module of the script kept in an attribute runs its forward
        return value_call(w, node, held, args)
    if name.startswith("forward"):
        _model_called(w, node, union)
        return union | {MODEL, ("out", site)} | objref(receiver)
    return receiver | union


def _hook_statistics(w, node: cst.Call, args: list[Arg]) -> None:
    """Where a forward hook keeps what it gathers: the names of this function that the hook
    changes (a closure's `acts[name] = ...`), or that a factory of hooks is handed
    (`make_hook(name, acts)`). Those hold the statistics from here on; where none is found, what
    the hooks gather is not followed."""
    holders = set()
    for arg in args:
        for label in arg.taint:
            fn = _function(w, label[1]) if label[0] == "fn" else None
            if fn is not None:
                holders |= set(w.a.summary(fn).free_mutates)
        if isinstance(arg.node, cst.Call):
            holders |= {n.value for a in arg.node.args for n in syntax.name_nodes(a.value)}
    holders = {name for name in holders if name in w.env}
    if not holders:
        return
    stat = ("calibstat", w.site(node))
    w.hook_stats |= {stat}
    for name in holders:
        w.env[name] = w.env[name] | {stat}


def _whole_state(w, args: list[Arg]) -> bool:
    """`load_state_dict(state)`, strict (every key must be there), of a state that holds no
    module's parameters: weights read back from a file or bytes, not a model's own state."""
    state = _arg(args, 0, "state_dict")
    if state is None or not (BLOB in state.taint or READ in state.taint) \
            or kinds(state.taint, "objref") or kinds(state.taint, "state"):
        return False
    for label in kinds(state.taint, "obj"):
        cls = w.p.classes.get(label[2])
        if (cls.is_module if cls is not None else label[2].startswith("torch.nn.")):
            return False
    strict = _arg(args, 1, "strict")
    return strict is None or not (isinstance(strict.node, cst.Name) and strict.node.value == "False")


# Methods whose meaning the analysis reads from the call itself, whoever defines them: training's
# protocol (an optimizer class of the script keeps its `step` too: the update is the step).
_PROTOCOL_METHODS = {"backward", "zero_grad", "parameters", "named_parameters", "requires_grad_",
                     "load_state_dict", *apis.HOOK_METHODS, *apis.SERIALIZE_METHODS}


def _run_methods(w, node: cst.Call, methods: list[Function], args: list[Arg], receiver: Taint,
                 receiver_node, union: Taint) -> Taint:
    result = EMPTY
    for fn in methods:
        result |= apply(w, node, fn, args, receiver=receiver, receiver_node=receiver_node)
    if any(fn.is_module_method for fn in methods):
        result |= {MODEL, ("out", w.site(node))} | objref(receiver)
        _model_called(w, node, union)
    return result


def _own_methods(w, receiver_node, receiver: Taint, name: str, *,
                 optimizers: bool) -> list[Function] | None:
    """The methods `obj.name(...)` runs where `obj` is `self` or an object made from a class of
    the script: the class's own; None where it is neither. Without `optimizers`, none of an
    optimizer class's (its `step` is read from the call as the update)."""
    if isinstance(receiver_node, cst.Name) and receiver_node.value in ("self", "cls") \
            and w.fn.cls is not None:
        own = _class_method(w, w.fn.cls, name)
        if own is not None:
            return [own] if optimizers or not w.fn.cls.is_optimizer else []
    classes = _script_classes(w, receiver)
    if not classes:
        return None
    if not optimizers and any(info.is_optimizer for info in classes):
        return []
    return [m for m in (_class_method(w, info, name) for info in classes) if m is not None]


def _methods(w, receiver_node, receiver: Taint, name: str) -> list[Function]:
    """The methods a call `obj.name(...)` may run: the class's own when `obj` is `self` or an
    object made from a class of the script; every method of that name when it is unknown."""
    own = _own_methods(w, receiver_node, receiver, name, optimizers=True)
    if own is not None:
        return own
    if LOADED in receiver:  # a module loaded at run time: the shipped scripts' own `name`
        found = [fns[name] for rel, fns in w.p.functions.items() if name in fns]
        if found:
            return found
    return w.p.methods.get(name, [])


def bound_method(w, receiver: Taint, name: str) -> Taint:
    """`obj.name` read, not called, where `obj` is an object of a class of the script whose
    `name` is a plain method (not a module's, whose call runs its forward, nor an optimizer's):
    the object, marked with that method, which runs with the object as its first parameter."""
    classes = _script_classes(w, receiver)
    methods = [m for m in (_class_method(w, info, name) for info in classes) if m is not None]
    if any(m.cls.is_module or m.cls.is_optimizer for m in methods):
        return EMPTY
    for fn in methods:
        w.reach(fn.key)
    return receiver | frozenset(("bound", fn.key) for fn in methods) if methods else EMPTY


def _script_classes(w, receiver: Taint) -> list[ClassInfo]:
    """The classes of the script that the objects in `receiver` were made from."""
    return [w.p.classes[label[2]] for label in kinds(receiver, "obj") if label[2] in w.p.classes]


def _class_method(w, cls: ClassInfo, name: str, depth: int = 0) -> Function | None:
    if name in cls.methods:
        return cls.methods[name]
    for base in cls.bases:
        info = w.p.classes.get(f"{cls.script.rel}:{base}")
        if info is not None and depth < 8:
            found = _class_method(w, info, name, depth + 1)
            if found is not None:
                return found
    return None


def value_call(w, node: cst.Call, callee: Taint, args: list[Arg]) -> Taint:
    """Calling a value: a function passed around, an object (its forward), a loss module, or an
    unknown callable such as a model given as a parameter."""
    union = _union(args)
    result = EMPTY
    resolved = False
    bound = kinds(callee, "bound")
    if bound:  # a method read off its object (`bound_method`): it runs with that object as `self`
        receiver = frozenset(label for label in callee if label[0] not in ("fn", "bound"))
        for label in bound:
            result |= apply(w, node, _function(w, label[1]), args, receiver=receiver)
        return result
    outer = _outermost(callee)
    for label in callee:
        if label[0] == "obj" and label not in outer:
            continue  # a submodule: its own forward runs where the model's forward calls it
        if label[0] == "fn":
            fn = _function(w, label[1])
            if fn is not None:
                result |= apply(w, node, fn, args)
                resolved = True
        elif label[0] == "cls":
            info = w.p.classes.get(label[1])
            if info is not None:
                result |= instantiate(w, node, info, args)
                resolved = True
        elif label[0] == "obj":
            info = w.p.classes.get(label[2])
            method = info and (_class_method(w, info, "forward") or _class_method(w, info, "__call__"))
            if method is not None:
                result |= apply(w, node, method, args, receiver=callee)
                resolved = True
    if LOSSFN in callee:
        _mark_target(w, _arg(args, 1, "target"), of_loss=True)
        return union | {("loss", w.site(node))}
    if resolved and not any(label[0] == "obj" for label in callee):
        return result
    _model_called(w, node, union)
    return result | union | {MODEL, ("out", w.site(node))} | objref(callee)


def _outermost(callee: Taint) -> Taint:
    """The objects a call of `callee` runs the forward of: not those made while another of them
    was built (a model carries the modules its constructor made, and calls them itself)."""
    objs = [label for label in callee if label[0] == "obj"]
    made = {id(label[1].inner) for label in objs}
    return frozenset(label for label in objs if not any(id(call) in made for call in label[1].chain))


def _model_called(w, node, union: Taint) -> None:
    """With activation hooks installed, whatever runs through the model is calibration data."""
    if w.hooks and has_data(union):
        w.emit(Event("calib", w.site(node), data_roots(union) | ({GEN} if GEN in union else EMPTY),
                     w.hook_stats))


def _function(w, key: str) -> Function | None:
    return w.p.by_key.get(key)


def apply(w, node: cst.Call, fn: Function, args: list[Arg], receiver: Taint | None = None,
          receiver_node=None) -> Taint:
    """Replay `fn`'s summary at this call: parameters bound to the arguments' taints."""
    summary = w.a.summary(fn)
    w.reach(fn.key)
    params = fn.params
    actuals: list[Taint] = [EMPTY] * len(params)
    nodes: list = [None] * len(params)
    start = 0
    if receiver is not None and fn.cls is not None and params:
        actuals[0], nodes[0], start = receiver, receiver_node, 1
    elif fn.cls is not None and params and params[0] in ("self", "cls"):
        start = 1
    position = start
    for arg in args:
        if arg.keyword is not None:
            if arg.keyword in params:
                i = params.index(arg.keyword)
                actuals[i] |= arg.taint
                nodes[i] = arg.node
            elif params:
                actuals[-1] |= arg.taint
        elif arg.star:
            for i in range(position, len(params)):
                actuals[i] |= arg.taint
        elif position < len(params):
            actuals[position] |= arg.taint
            nodes[position] = arg.node
            position += 1
        elif params:
            actuals[-1] |= arg.taint
    site = w.site(node)
    result = settings_named(w, substitute(summary.returns, actuals, site, fn), nodes)
    w.call_elements.setdefault(id(node), []).append(
        None if summary.elements is None else (summary, actuals, site, fn))
    for i, taint in summary.mutates.items():
        if i < len(nodes) and nodes[i] is not None:
            w.mutate(nodes[i], substitute(taint, actuals, site, fn))
    for i in summary.uses:  # what the callee put into weights, the artifact or a field
        if i < len(actuals):
            w.use_stats(actuals[i])
    for name, taint in summary.free_mutates.items():  # a closure changed a name of this function
        if name in w.env:
            w.env[name] = w.env[name] | _relocated(taint, site, fn)
    pending = loss_data(w.grad)
    for event in summary.events:
        moved = event.moved(site, actuals)
        if moved.kind == "update" and "consumes" in event.flags:
            # the callee stepped on gradients it did not compute: the caller's backward passes
            moved = dataclasses.replace(moved, taint=moved.taint | pending)
        w.emit(moved)
    exit_grad = substitute(summary.grad, actuals, site, fn)
    if summary.clears_grad:
        w.grad, w.cleared_grad = exit_grad, True
    else:
        w.grad = w.grad | exit_grad
    if HOOK in result:
        w.hooks = True
    return result


def instantiate(w, node: cst.Call, info: ClassInfo, args: list[Arg]) -> Taint:
    site = w.site(node)
    key = f"{info.script.rel}:{info.name}"
    w.summary.classes.add(key)
    obj = frozenset({("obj", site, key)})
    result = obj
    init = _class_method(w, info, "__init__")
    if init is not None:
        summary = w.a.summary(init)
        apply(w, node, init, args, receiver=obj)
        if 0 in summary.mutates:
            result |= substitute(summary.mutates[0], [obj], site, init) - {("param", 0)}
    if init is None and info.fields and not info.is_module:
        result |= _record_fields(w, info.fields, args)
    elif not info.is_module:
        result |= _union(args)
    post = _class_method(w, info, "__post_init__")  # a dataclass runs it after its fields are set
    if post is not None:
        summary = w.a.summary(post)
        apply(w, node, post, [], receiver=obj)
        if 0 in summary.mutates:
            result |= substitute(summary.mutates[0], [obj], site, post) - {("param", 0)}
    if info.is_optimizer:
        result |= {OPTIM} | _union(args)
    return result


def _record_fields(w, fields: tuple[str, ...], args: list[Arg]) -> Taint:
    """A dataclass or NamedTuple built from its fields: each argument is stored under its field's
    name, so `run.train_loader()` does not see `run.val`. What only the caller can resolve (a
    parameter) and what cannot be placed (`**kwargs`) stays on the object itself."""
    kept = EMPTY
    for k, arg in enumerate(args):
        name = arg.keyword if arg.keyword is not None else fields[k] if k < len(fields) else None
        if arg.star or name is None:
            kept |= arg.taint
            continue
        w.a.store_field(name, arg.taint)
        kept |= arg.taint - w.a.concrete(arg.taint)
    return kept


def _callbacks(w, node: cst.Call, args: list[Arg]) -> None:
    """A function passed as an argument (`timed_eval("x", eval_val, model, tokens)`) runs with the
    arguments that follow it."""
    for k, arg in enumerate(args):
        for label in arg.taint:
            if label[0] not in ("fn", "bound") or arg.keyword is not None:
                continue
            fn = _function(w, label[1])
            if fn is None or fn.node is None:
                continue
            rest = [a for a in args[k + 1:] if a.keyword is None or a.keyword in fn.params]
            if label[0] == "bound":  # a method of an object: the object is its `self`
                apply(w, node, fn, rest, receiver=frozenset(x for x in arg.taint if x[0] != "bound"))
            else:
                apply(w, node, fn, rest)


def _root(node) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _fresh_copy(taint: Taint, site: Site) -> Taint:
    """`copy.deepcopy(model)`: the same data and class, but objects and parameters of its own,
    made here, so training the copy adapts no model the original scores with. (A copy of a
    parameter keeps the parameter's labels: what it holds is known only at the call site.)"""
    out = set()
    for label in taint:
        if label[0] == "obj":
            out.add(("obj", site, label[2]))
        elif label[0] == "state" and label[1] is not None:
            out.add(("state", site, label[2]))
        elif label[0] != "objref":
            out.add(label)
    return frozenset(out)


def _state(taint: Taint) -> Taint:
    """What an update changes (and, for a step, whether it was called on an optimizer; "prev":
    it was started from a value carried over from the previous iteration)."""
    return frozenset(label for label in taint if label[0] in ("state", "objref", "param", "optim", "prev"))
