"""What operations do to the labels of their operands: hashing, tilts and gates read from the
scored token, byte spreading, bits per byte, data named by a path."""

from __future__ import annotations

import functools
import re

import libcst as cst

from audits.legality import syntax
from audits.legality.values import (
    BLOB, EMPTY, GEN, INDICATOR, MODEL, PROB, STAT, TARGET, TRAIN, VAL, Taint, has_data, kinds,
    passes,
)

# Data files are named by split: fineweb_val_000000.bin, fineweb_train_*.bin, val.bin, ...
_PATHLIKE = re.compile(r"[/*\\]|\.(bin|npy|npz|pt|jsonl|json|txt|arrow|parquet)\b|fineweb")
_VAL_WORD = re.compile(r"(?<![a-z])val(id|idation)?(?![a-z])", re.I)
_TRAIN_WORD = re.compile(r"(?<![a-z])train(ing)?(?![a-z])", re.I)
_SPLIT_NAMES = {"val": VAL, "valid": VAL, "validation": VAL}
_BITS = {0.6931471805599453, 1.4426950408889634}


def big_int(node) -> bool:
    return isinstance(node, cst.Integer) and int(node.value, 0) >= 1000


def span(node: cst.Subscript, code) -> tuple | None:
    """("span", lower, upper) for the positions a slice keeps (`nll[:, s:wlen]` -> s, wlen)."""
    for element in node.slice:
        s = element.slice
        if isinstance(s, cst.Slice) and (s.lower is not None or s.upper is not None):
            return ("span", code(s.lower) if s.lower is not None else "",
                    code(s.upper) if s.upper is not None else "END")
    return None


def tilts(indicator: Taint, other: Taint) -> bool:
    """An indicator of `target == hint` applied, for the first time, to a probability or log-prob."""
    def scored(t):
        return bool(kinds(t, "loss")) or PROB in t
    return INDICATOR in indicator and not scored(indicator) and scored(other)


def as_bytes(taint: Taint) -> Taint:
    """What a table holds for the scored token, taken as that token's bytes."""
    return frozenset(("bytes", label[1]) if label[0] == "gate" else label for label in taint)


def is_target_vs_hint(target: Taint, hint: Taint) -> bool:
    """`target == hint`: the realized token compared with a token predicted from context, or with
    a parameter's value (a helper given the hints: only its callers know they are data)."""
    return TARGET in target and TARGET not in hint and (has_data(hint) or bool(kinds(hint, "param")))


def may_be_stored(target: Taint, other: Taint) -> bool:
    """`other == target`, where `other` may turn out (at a call site) to be tokens read back from
    a compressed blob: the answers themselves, kept in the artifact (see is_stored)."""
    return TARGET in target and (BLOB in other or bool(kinds(other, "param"))) and not (
        {TARGET, MODEL, PROB} & other)


def written_data(taint: Taint) -> bool:
    """Data a serializer writes as data: tokens, not a score, a statistic or a model's weights.
    Checked where the write is made and again where a helper's write turns out (at its call
    site) to hold a score (`save_checkpoint(model, step, val_bpb)`)."""
    return has_data(taint) and not (kinds(taint, "loss") or MODEL in taint or STAT in taint)


def is_stored(other: Taint) -> bool:
    return BLOB in other and not ({TARGET, MODEL, PROB} & other)


def gated(left: Taint, right: Taint) -> Taint:
    """A coefficient read from the realized token, applied to a probability or a tilt indicator.
    (Values built from the scored token's bytes are the byte-mixture rule's finding instead.)"""
    out = set()
    if kinds(left, "bytes") or kinds(right, "bytes"):
        return frozenset()
    for gate_side, other in ((left, right), (right, left)):
        if kinds(gate_side, "gate") and (PROB in other or INDICATOR in other):
            out |= {("gated", label[1]) for label in kinds(gate_side, "gate")}
    return frozenset(out)


def counted_gates(divisor: Taint, dividend: Taint) -> Taint:
    """The gates a total divides away: `loss_sum / byte_count`, where the divisor sums a table
    read at the scored tokens (their bytes) over positions and holds no loss or probability. A
    total counts the tokens; it weighs no one token's probability."""
    if STAT not in divisor or kinds(divisor, "loss") or {PROB, MODEL, INDICATOR} & divisor:
        return frozenset()
    return frozenset(kinds(divisor, "gate")) - dividend


def condition(test: Taint, values: Taint) -> Taint:
    """A choice between values made by a condition (`a if c else b`, torch.where)."""
    out = set()
    if kinds(test, "gate") and (PROB in values or INDICATOR in values or not kinds(values, "loss")):
        out |= {label for label in test if label[0] == "gate"}
    if len(passes(test)) >= 2:
        out |= {label for label in test if label[0] == "select"}
    return frozenset(out)


def additive_smoothing(node: cst.BinaryOperation) -> bool:
    """`(count + k) / (total + k2)` with k2 < 2k: the same constant on both sides, where the
    total needs k times the vocabulary size to keep the distribution summing to 1."""
    def added(expr):
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) \
                and isinstance(expr.right, (cst.Integer, cst.Float)):
            return float(expr.right.evaluated_value)
        return None
    num, den = added(node.left), added(node.right)
    return num is not None and den is not None and num > 0 and den < 2 * num


def tilt_normalizer(node: cst.BinaryOperation, code,
                    boost_names: frozenset[str] = frozenset()) -> list[cst.BaseExpression]:
    """The closed form of a one-token tilt's normaliser, Z = sum_v p_v * w ** [v == hint]:
    `1 + p * (w - 1)`, `1 + p * expm1(b)` or `1 - p + p * w`, in any order. Gives the factors
    that hold the boost (`w - 1`, `expm1(b)`, `w`; none: not this form). Z is exact whatever p is
    computed from (the log-sum-exp recovered from the scored token's NLL, say), but only for a
    boost that does not depend on the scored token: the caller checks that. `boost_names`: names
    bound to a boost factor earlier (`e = math.expm1(b)`)."""
    terms = _terms(node, 1)
    ones = [t for t in terms if t[0] > 0 and _is_one(t[1])]
    if len(ones) != 1:
        return []
    rest = [t for t in terms if t is not ones[0]]
    products = [factors(e) for sign, e in rest if sign > 0 and _is_product(e)]
    if len(rest) == 1 and products:  # 1 + p * (w - 1)
        return tilt_excess(rest[0][1], boost_names)
    negated = [code(e) for sign, e in rest if sign < 0]
    if len(rest) == 2 and len(products) == 1 and len(negated) == 1:  # 1 - p + p * w
        others = [f for f in products[0] if code(f) != negated[0]]
        return others if len(others) == len(products[0]) - 1 and others else []
    return []


def tilt_excess(node, boost_names: frozenset[str] = frozenset()) -> list[cst.BaseExpression]:
    """`p * (w - 1)` or `p * expm1(b)`, Z - 1 of a one-token tilt (whose log1p is log Z), the
    factor possibly a name bound to one before: the boost factors, or none."""
    parts = factors(node) if _is_product(node) else []
    boosts = [f for f in parts if boost_factor(f)
              or (isinstance(f, cst.Name) and f.value in boost_names)]
    return boosts if len(parts) >= 2 else []


def boost_factor(node) -> bool:
    """`w - 1` or `expm1(b)`: a one-token tilt's boost less one."""
    return _minus_one(node) or syntax.called_name(node) == "expm1"


def _terms(node, sign: int) -> list[tuple[int, cst.BaseExpression]]:
    """The signed terms of a chain of + and -."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        right = -sign if isinstance(node.operator, cst.Subtract) else sign
        return _terms(node.left, sign) + _terms(node.right, right)
    return [(sign, node)]


def _is_product(node) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply)


def factors(node) -> list[cst.BaseExpression]:
    """The factors of a product (`n * 3.7`: [n, 3.7]); a lone value is its only factor."""
    if _is_product(node):
        return factors(node.left) + factors(node.right)
    return [node]


def _is_one(node) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and node.evaluated_value == 1


def _minus_one(node) -> bool:
    """`w - 1`."""
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract) \
        and _is_one(node.right)


def is_ln2(node) -> bool:
    if isinstance(node, cst.Float):
        return any(abs(node.evaluated_value - b) < 1e-3 for b in _BITS)
    if isinstance(node, cst.Call) and isinstance(node.func, (cst.Attribute, cst.Name)):
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
        return name == "log" and len(node.args) == 1 and isinstance(node.args[0].value, (cst.Integer, cst.Float)) \
            and node.args[0].value.evaluated_value == 2
    return False


def is_log2e(node, program, fn) -> bool:
    """`1.4427`, a name bound to it, or `1 / math.log(2)`: a factor that turns nats into bits."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide) \
            and syntax.number(node.left) == 1 and is_ln2(node.right):
        return True
    value = fixed_number(node, program, fn) if not isinstance(node, cst.Integer) else None
    return value is not None and abs(value - 1.4426950408889634) < 1e-3


def bytes_ratio(node, program, fn) -> bool:
    """A number that can only be an assumed bytes-per-token ratio (or its inverse, `1 / 3.7`): a
    float literal, or a name, class attribute or setting whose value is one whatever the data
    (see `fixed_number`). An integer literal is a count or a halving, not a ratio."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide) \
            and isinstance(node.left, (cst.Integer, cst.Float)):
        node = node.right
    value = None if isinstance(node, cst.Integer) else fixed_number(node, program, fn)
    return value is not None and (1.5 <= value <= 8.0 or 0.125 <= value <= 0.67)


def _bytes_per_token(node, program, fn) -> bool:
    """A fixed number of bytes per token (1.5 to 8), not its inverse; not an integer literal."""
    value = None if isinstance(node, cst.Integer) else fixed_number(node, program, fn)
    return value is not None and 1.5 <= value <= 8.0


def ratio_with_ln2(node, program, fn) -> bool:
    """`math.log(2) * 3.7`, `3.7 * math.log(2)`, `math.log(2) * n_tokens * BPT`: ln 2 and a fixed
    bytes-per-token ratio in one divisor (`loss / (math.log(2) * 3.7)`)."""
    parts = factors(node)
    return any(is_ln2(f) for f in parts) and ratio_factor(parts, program, fn)


def ratio_factor(parts, program, fn) -> bool:
    """A fixed bytes-per-token ratio among the factors of a divisor (`n_tokens * 3.7`: the bytes
    taken to be a fixed multiple of the tokens)."""
    return any(not is_ln2(f) and _bytes_per_token(f, program, fn) for f in parts)


def scaled_by_ratio(node, program, fn) -> bool:
    """`loss * 0.27` or `loss / 3.7`: a value scaled by a fixed bytes-per-token ratio before it
    is turned into bits (`loss * 0.27 / math.log(2)`)."""
    if not isinstance(node, cst.BinaryOperation) or not isinstance(node.operator, (cst.Multiply, cst.Divide)):
        return False
    if isinstance(node.operator, cst.Divide):
        return _bytes_per_token(node.right, program, fn)
    # a halving or a quarter is an average of two or four losses, not a ratio of bytes
    return any(bytes_ratio(side, program, fn) and fixed_number(side, program, fn) not in (0.5, 0.25)
               for side in (node.left, node.right))


def fixed_number(node, program, fn, depth: int = 0) -> float | None:
    """The number an expression stands for whatever the data and the run: a literal; a name bound
    once to one (in the function, else at module level); an attribute that one class binds to one;
    a setting's default (`float(os.environ.get("BPT", "3.7"))`); products and quotients of
    those. None where it depends on anything else (a count, a table, an argument)."""
    if depth > 6:
        return None
    value = syntax.number(node)
    if value is not None:
        return value
    if isinstance(node, cst.SimpleString):
        try:
            return float(str(node.evaluated_value).strip())
        except (ValueError, TypeError):
            return None
    bound: list = []
    if isinstance(node, cst.Name):
        if node.value in fn.params:
            return None  # whatever the callers pass
        if fn.node is not None:
            bound = _bindings(fn.node.body, node.value)
        if not bound:
            bound = _bindings(program.roots[fn.script.rel].body, node.value, nested=False)
    elif isinstance(node, cst.Attribute):
        bound = [value for cls in program.classes.values()
                 for value in _bindings(cls.node.body, node.attr.value, nested=False)]
    elif isinstance(node, cst.Call) and node.args:
        name = syntax.called_name(node)
        if name in ("float", "int") and len(node.args) == 1:
            bound = [node.args[0].value]
        elif name in ("get", "getenv") and len(node.args) == 2 and isinstance(node.args[0].value, cst.SimpleString):
            bound = [node.args[1].value]  # a setting read from the environment: its default
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Multiply, cst.Divide)):
        left = fixed_number(node.left, program, fn, depth + 1)
        right = fixed_number(node.right, program, fn, depth + 1)
        if left is None or right is None or (isinstance(node.operator, cst.Divide) and right == 0):
            return None
        return left * right if isinstance(node.operator, cst.Multiply) else left / right
    if len(bound) != 1 or bound[0] is None:
        return None  # unbound, bound several times, or bound by a loop or an unpacking
    return fixed_number(bound[0], program, fn, depth + 1)


def _bindings(body, name: str, nested: bool = True) -> list:
    """The values `name` is assigned in a block (see `_assignments`)."""
    return _block_bindings(body, nested).get(name, [])


@functools.lru_cache(maxsize=1024)
def _block_bindings(body, nested: bool) -> dict[str, list]:
    """Every name a block binds, with its values: one walk per block (nodes hash by identity)."""
    out: dict[str, list] = {}
    for name, value in _assignments(body, nested):
        out.setdefault(name, []).append(value)
    return out


def _assignments(body, nested: bool):
    """(name, value) for each binding in a block (`name = v`, `name: T = v`), also inside its
    compound statements where `nested`; a name bound by a loop, an unpacking or an augmented
    assignment is no constant (its binding counts, with no value)."""
    for statement in getattr(body, "body", body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        if isinstance(t.target, cst.Name):
                            yield t.target.value, small.value
                        else:
                            yield from ((n, None) for n in _names(t.target))
                elif isinstance(small, (cst.AnnAssign, cst.AugAssign)) and isinstance(small.target, cst.Name):
                    yield small.target.value, small.value if isinstance(small, cst.AnnAssign) else None
        elif nested and not isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            if isinstance(statement, cst.For):
                yield from ((n, None) for n in _names(statement.target))
            for block in _blocks(statement):
                yield from _assignments(block, True)


def _names(target) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_names(e.value) for e in target.elements)) if target.elements else set()
    return set()


def _blocks(statement) -> list:
    """The indented blocks of a compound statement (its body, elif and else, handlers, finally)."""
    out = []
    for attr in ("body", "orelse", "finalbody"):
        part = getattr(statement, attr, None)
        if isinstance(part, cst.BaseSuite):
            out.append(part)
        elif isinstance(part, (cst.If, cst.Else, cst.Finally)):
            out += _blocks(part)
    for handler in getattr(statement, "handlers", ()):
        out.append(handler.body)
    return out


def gen(taint: Taint) -> Taint:
    return frozenset({GEN}) if GEN in taint else EMPTY


def string_taint(text: str) -> Taint:
    """Validation or training data, as far as a literal path or split name says."""
    if text.lower() in _SPLIT_NAMES:
        return frozenset({_SPLIT_NAMES[text.lower()]})
    if not _PATHLIKE.search(text) or text.endswith(".py") or re.search(r"\s", text):
        return EMPTY  # a message or a doc string mentioning the shards is not a path
    out = set()
    if _VAL_WORD.search(text):
        out.add(VAL)
    if _TRAIN_WORD.search(text):
        out.add(TRAIN)
    return frozenset(out)
