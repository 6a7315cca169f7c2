"""The differential corpus: snippets on which pgolf's Python 3.10 verdict must equal a real
CPython 3.10's. Hand-written edge cases of every feature the gate knows, their legal 3.10 twins,
generated f-string variants (quote kinds, prefixes, nesting, triple quotes, raw and byte strings,
format specs, `=` specifiers, conversions, line continuations, placements) and source that no
Python accepts. Deterministic: `snippets()` returns the same list every time, and
oracle310.json stores the oracle's verdict for each.
"""

from __future__ import annotations

import itertools

QUOTES = ['"', "'", '"""', "'''"]


def snippets() -> list[str]:
    out: list[str] = []
    for group in (_pep701(), _fstring_variants(), _continuations(), _fstring_errors(), _grammar(), _mixed(),
                  _training_code(), _headers(), _everywhere()):
        for snippet in group:
            if snippet not in out:
                out.append(snippet)
    return out


def _pep701() -> list[str]:
    """f-strings that only Python 3.12 accepts, next to twins 3.10 accepts."""
    return [
        # the seed case and its relatives
        'log(f"{", ".join(x)}")\n',
        "log(f\"{', '.join(x)}\")\n",
        "log(f'{', '.join(x)}')\n",
        'log(f\'{", ".join(x)}\')\n',
        'x = 1\ny = 2\nlog(f"{", ".join(map(str, [x, y]))}")\n',
        'print(f"{d["key"]}")\n',
        "print(f\"{d['key']}\")\n",
        'print(f"{d["a"]["b"]}")\n',
        'print(f"{"nested"}")\n',
        "print(f'{'nested'}')\n",
        'print(f"{f"{x}"}")\n',
        "print(f\"{f'{x}'}\")\n",
        'print(f"{f"{f"{x}"}"}")\n',
        "print(f\"{f'{f'{x}'}'}\")\n",
        "print(f\"\"\"{f'''{f\"{f'{x}'}\"}'''}\"\"\")\n",
        'print(f"""{f"""{x}"""}""")\n',
        # backslashes in a field
        "print(f\"{'\\n'.join(lines)}\")\n",
        "nl = '\\n'\nprint(f\"{nl.join(lines)}\")\n",
        "print(f\"{'\\\\'}\")\n",
        'print(f"{x!r:\\n}")\n',
        "print(f'{chr(10)}')\n",
        # comments and newlines in a field
        'print(f"""{\n    x  # the value\n}""")\n',
        'print(f"""{\n    x\n}""")\n',
        'print(f"{\n    x\n}")\n',
        'print(f"{x\n}")\n',
        "print(f'''{x # c\n}''')\n",
        "print(f'''{x}''' # c\n)\n",
        # format specs and = specifiers
        'print(f"{x:{"<"}10}")\n',
        "print(f\"{x:{'<'}10}\")\n",
        'print(f"{x = }")\n',
        'print(f"{x=!r:>{w}}")\n',
        'print(f"{x=:{"^"}{w}}")\n',
        'print(f"{x!r}")\n',
        'print(f"{x:>{w}.{p}f}")\n',
        'print(f"{x:{y:{z}}}")\n',
        'print(f"{x:{{y}}}")\n',
        'print(f"{{literal}} {x}")\n',
        'print(f"{"{"}")\n',
        'print(f"{"}"}")\n',
        # raw and byte strings next to f-strings
        'print(rf"{x}\\d")\n',
        'print(fr"{"a"}")\n',
        "print(rf'{x}' b'')\n",
        'print(b"a" b"b", f"{x}")\n',
        'print(f"{x}" "plain" f"{y}")\n',
        'print(f"{x}" "plain" f"{"y"}")\n',
        'print("plain" f"{"y"}" "tail")\n',
        # f-strings spread over lines
        'msg = (f"{a}"\n       f"{"b"}")\n',
        'msg = (f"{a}"\n       f"{b}")\n',
        'msg = f"{a}" \\\n    f"{"b"}"\n',
        'msg = f"{a}" \\\n    f"{b}"\n',
        'def f():\n    return f"{", ".join(x)}"\n',
        'class C:\n    def f(self):\n        if x:\n            log(f"{d["k"]}")\n',
        'x = [\n    f"{a}",\n    f"{d["k"]}",\n]\n',
        'x = {\n    "a": f"{d["k"]}",\n}\n',
        'call(\n    a,\n    f"{",".join(b)}",  # comment\n)\n',
        'call(\n    a,\n    f"{",".join(b)}"\n    # comment\n    , c)\n',
        'for i in range(3):\n    print(f"{i:{"0"}3d}")\n',
        'lambda: f"{"x"}"\n',
        'assert x, f"{"bad"}"\n',
        'raise ValueError(f"{x!r} not in {", ".join(y)}")\n',
    ]


def _fstring_variants() -> list[str]:
    """Generated f-strings: every outer quote and prefix, with fields whose inner strings use
    every quote kind, with and without conversions, specs and `=`, in several placements."""
    out = []
    prefixes = ["f", "F", "rf", "fR", "Rf"]
    inner = ['"a"', "'a'", '"""a"""', "'''a'''"]
    tails = ["", "!r", ":>8", "=", "=!s", ":{w}", "!a:^{w}.{p}"]
    for q, prefix, s, tail in itertools.product(QUOTES, prefixes, inner, tails):
        if prefix not in ("f", "rf") and tail not in ("", "="):
            continue  # keep the product moderate: other prefixes with two tails only
        out.append(f"x = {prefix}{q}{{{s}.upper(){tail}}}{q}\n")
    # nesting depth 1 to 3 with each pair of quote kinds
    for q1, q2 in itertools.product(QUOTES, repeat=2):
        out.append(f"x = f{q1}{{f{q2}{{y}}{q2}}}{q1}\n")
        out.append(f"x = f{q1}{{a}} and {{f{q2}{{b!r}}{q2}}}{q1}\n")
    for q1, q2, q3 in itertools.product(['"', "'", '"""'], repeat=3):
        out.append(f"x = f{q1}{{f{q2}{{f{q3}{{z}}{q3}}}{q2}}}{q1}\n")
    # placements: statement, call argument, parenthesized multi-line, continuation, block
    bodies = ['f"{d["k"]}"', "f\"{d['k']}\"", 'f"{x!r:>10}"', 'f"{x=}"', "f'{x}' f\"{y}\"",
              'f"""{d["k"]}"""', "f'''{d['k']}'''", 'f"{"\\t".join(x)}"', "f\"{'\\t'.join(x)}\""]
    for body in bodies:
        out.append(f"s = {body}\n")
        out.append(f"print({body}, end='')\n")
        out.append(f"s = (\n    {body}\n)\n")
        out.append(f"s = \\\n    {body}\n")
        out.append(f"if x:\n    s = {body}\nelse:\n    s = ''\n")
        out.append(f"s = [\n    1,\n    {body},\n    2]\n")
        out.append(f"s = 1\ns = {body}  # trailing comment\ns = 2\n")
        out.append(f"def g():\n    yield {body}\n")
    # the token after the literal closes the bracket the literal sits in
    for body in ['f"{x}"', 'f"{d["k"]}"', "f'{x!r}' 'tail'", 'f"""{x}"""']:
        for left, right in (("[", "]"), ("(", ")"), ("{", "}"), ("{'k': ", "}"), ("f(", ")"), ("x[", "]")):
            out.append(f"v = {left}{body}{right}\n")
            out.append(f"v = {left}\n    {body}\n{right}\n")
    # adjacent literals of every kind around one f-string
    others = ['"s"', "'s'", 'r"s"', 'b"s"', 'rb"s"', 'u"s"', '"""s"""', 'f"{s}"', 'f"{"s"}"']
    for left, right in itertools.product(others, repeat=2):
        out.append(f"v = {left} f\"{{x}}\" {right}\n")
    # format specs holding fields, quotes and escapes
    for spec in ["{w}", "{w}.{p}", ">{w}", "{'>'}{w}", '{">"}{w}', "\\n", "{w!r}", "{w:{v}}", "=", "!"]:
        out.append(f"v = f\"{{x:{spec}}}\"\n")
        out.append(f"v = f'{{x:{spec}}}'\n")
    return out


def _continuations() -> list[str]:
    """Backslash-newlines and newlines in and around f-strings, in every quote kind."""
    out = []
    for q in QUOTES:
        out += [
            f"x = f{q}a\\\nb{{x}}{q}\n",  # escaped newline in the literal part
            f"x = f{q}{{x}}\\\n{q}\n",
            f"x = f{q}{{x\\\n}}{q}\n",  # escaped newline inside a field
            f"x = f{q}{{x\n}}{q}\n",  # a bare newline inside a field
            f"x = f{q}{{\nx}}{q}\n",
            f"x = f{q}{{x:\n}}{q}\n",  # a newline in a format spec
            f"x = f{q}{{x!r}}\n{q}\n",
            f"x = (f{q}{{x}}{q}\n     f{q}{{y}}{q})\n",
            f"x = f{q}{{x}}{q} \\\n    f{q}{{y}}{q}\n",
            f"x = f{q}{{x}}{q} \\\n\n",
            f"x = [f{q}{{x}}{q},\n     # comment\n     f{q}{{y}}{q}]\n",
            f"x = f{q}{{(x +\n y)}}{q}\n",
            f"x = f{q}{{x # c\n}}{q}\n",
            f"x = rf{q}\\{{x}}\\{q}\n",
            f"x = fr{q}{{x}}\\n{q}\n",
            f"x = b{q}\\x41{q} + b{q}{q}\n",
            f"x = rb{q}\\d{q}\n",
        ]
    return out


def _fstring_errors() -> list[str]:
    """f-strings that 3.10 rejects for reasons every Python shares, and edge cases of its scanner."""
    return [
        'x = f"{}"\n', 'x = f"{ }"\n', 'x = f"{!r}"\n', 'x = f"{a!x}"\n', 'x = f"{a!}"\n',
        'x = f"{a"\n', 'x = f"{a!r"\n', 'x = f"{a:"\n', 'x = f"}"\n', 'x = f"{a}}"\n', 'x = f"{{}"\n',
        'x = f"{a b}"\n', 'x = f"{a)}"\n', 'x = f"{(a}"\n', 'x = f"{[a)}"\n', 'x = f"{1a}"\n',
        'x = f"{x:{y:{z}}}"\n', 'x = f"\\N{DASH}{x}"\n', 'x = f"\\N{EN DASH}{x}"\n', 'x = f"\\x4{a}"\n',
        'x = f"{x!r=}"\n', 'x = f"{x = !r}"\n', 'x = f"{lambda x: 1}"\n', 'x = f"{(lambda x: 1)}"\n',
        'x = f"{yield}"\n', 'x = f"{*a}"\n', 'x = f"{*a,}"\n', 'x = f"{a:=1}"\n', 'x = f"{(a:=1)}"\n',
        'x = f"{a!=b}"\n', 'x = f"{a<b}"\n', 'x = f"{a>=b}"\n', 'x = f"{a==b=}"\n',
        'x = (\n    f"{a!x}"\n    "tail"\n)\n', 'x = (1,\n f"{a b}"\n , 2)\n',
        'x = 1\ny = f"""\n\n{1a}"""\n', 'x = 1\ny = f"""\n\n{\n1a}"""\n',
        'x = 1\ny = f"""\n{(\n\n$)}"""\n', 'x = 1\ny = f"""\n\n{f"{a!z}"}"""\n',
        'x = f"{a}" b"x"\n', 'x = b"a" f"b"\n', 'x = "\\x4" f"{a}"\n', "x = b'\\x4'\n", "x = b'é'\n",
        'x = f"{f"{a!z}"}"\n', "x = f\"{f'{a!z}'}\"\n", "x = f\"{f'{1a}'}\"\n",
        "x = f\"{x:{'a' 'b'}}\"\n", 'x = f"{x:{"a" "b"}}"\n',
    ]


def _grammar() -> list[str]:
    """Grammar newer than 3.10 in the places it appears in real code, with 3.10 twins."""
    out = [
        # except* (3.11) and its twin
        "try:\n    pass\nexcept* ValueError:\n    pass\n",
        "try:\n    pass\nexcept *ValueError as e:\n    pass\n",
        "try:\n    pass\nexcept* (ValueError, TypeError) as eg:\n    raise\n",
        "try:\n    pass\nexcept ValueError:\n    pass\nexcept* TypeError:\n    pass\n",
        "def f():\n    try:\n        x()\n    except* OSError:\n        return 1\n",
        "try:\n    pass\nexcept ValueError:\n    pass\n",
        "try:\n    pass\nexcept (ValueError, TypeError) as e:\n    pass\n",
        # starred subscripts (3.11) in many places, and twins
        "x[*a]\n", "x[a, *b]\n", "x[*a, b]\n", "x[*a, *b]\n", "x[1:2, *a]\n", "x[*a] = 1\n",
        "del x[*a]\n", "x[*a]: int = 1\n", "y: x[*a] = 1\n", "y = x[*a]\n", "y = x.t[*a]\n",
        "y = f(x)[*a]\n", "y = x[0][*a]\n", "y = 1 + x[*a]\n", "y = -x[*a]\n", "y = not x[*a]\n",
        "y = a and x[*a]\n", "y = a < x[*a]\n", "y = x[*a] + 1\n", "y = x[*a].b\n", "y = x[*a](1)\n",
        "y = x[*a] if c else d\n", "y = c if x[*a] else d\n", "return_ = lambda: x[*a]\n",
        "def f():\n    return x[*a]\n", "f(x[*a])\n", "f(1, x[*a], 2)\n", "f(k=x[*a])\n",
        "[x[*a]]\n", "{x[*a]: 1}\n", "(x[*a], 1)\n", "y = (x[*a])\n", "y = (\n    x[*a]\n)\n",
        "f(\n    x[*a],\n    b,\n)\n", "f(y +\n  x[*a])\n", "y = [v for v in x[*a]]\n",
        "y = [x[*a] for v in w]\n", "Alias = tuple[int, *Ts]\n", "class G(Generic[*Ts]):\n    pass\n",
        "def f() -> tuple[*Ts]:\n    pass\n", "def f(a: tuple[*Ts]):\n    pass\n",
        "print[*a]\n", "x[*a], y\n", "x[*a], f'{1}'\n", "y = x[*a], 'é'\n",
        "x[(*a,)]\n", "x[a, b]\n", "x[(a, *b)]\n", "y = [*a, *b]\n", "f(*a)\n",
        "Alias = tuple[int, Unpack[Ts]]\n",
        # *args: *Ts (3.11) and twins
        "def f(*args: *Ts):\n    pass\n", "def f(a, *args: *tuple[int, ...], k=1):\n    pass\n",
        "async def f(*args: *Ts) -> None:\n    pass\n", "class C:\n    def m(self, *a: *Ts): ...\n",
        "def f(*args: Ts):\n    pass\n", "def f(*args: 'Ts'):\n    pass\n",
        # PEP 695 (3.12): type parameters and the type statement, and twins
        "def f[T](x: T) -> T:\n    return x\n", "async def f[T](x: T):\n    pass\n",
        "def f[T: int, *Ts, **P](x):\n    pass\n", "def f[T: (int, str)]():\n    pass\n",
        "class C[T]:\n    pass\n", "class C[T](Base):\n    pass\n", "class C[T: int, *Ts]:\n    pass\n",
        "@dec\nclass C[T]:\n    pass\n", "class Outer:\n    class Inner[T]:\n        pass\n",
        "type Alias = int\n", "type Alias[T] = list[T]\n", "type Alias[T: int] = list[T]\n",
        "if x:\n    type Alias = int\n", "def f():\n    type A = int\n    return A\n",
        "type = 5\n", "type(x)\n", "print(type)\n", "x = type\n", "type.mro(int)\n",
        "T = TypeVar('T')\ndef f(x: T) -> T:\n    return x\n",
        "class C(Generic[T]):\n    pass\n", "Alias: TypeAlias = int\n",
        # PEP 696 (3.13) defaults
        "def f[T = int]():\n    pass\n", "class C[T = int]:\n    pass\n",
        "type A[T = int] = list[T]\n", "class C[*Ts = *tuple[int]]:\n    pass\n",
        # t-strings (3.14) and twins
        't"hello {name}"\n', 'x = t"{a}"\n', "x = T'{a}'\n", 'x = rt"{a}\\d"\n', 'x = tr"{a}"\n',
        'print(t"{a}", end="")\n', 'x = t"{a}" + t"{b}"\n', 'x = (\n    t"{a}"\n)\n',
        'x = t"""{a}\n"""\n', 'x = t"{d["k"]}"\n', 't = "x"\n', 't("x")\n', 'x = t\n',
        'x = f"{a}"\n', 'x = rt\n',
        # unparenthesized except types (3.14) and twins
        "try:\n    pass\nexcept A, B:\n    pass\n", "try:\n    pass\nexcept A, B, C:\n    pass\n",
        "try:\n    pass\nexcept A, B as e:\n    pass\n", "try:\n    pass\nexcept (A, B):\n    pass\n",
        "try:\n    pass\nexcept* A, B:\n    pass\n",
        # PEP 765 (3.14 warns) compiles on 3.10
        "def f():\n    try:\n        pass\n    finally:\n        return 1\n",
        "for x in y:\n    try:\n        pass\n    finally:\n        break\n",
        "for x in y:\n    try:\n        pass\n    finally:\n        continue\n",
        "def f():\n    try:\n        pass\n    finally:\n        for x in y:\n            break\n",
        # nested asynchronous comprehensions (3.11) and twins
        "async def f():\n    return [[x async for x in y] for z in w]\n",
        "async def f():\n    return [[await x for x in y] for z in w]\n",
        "async def f():\n    return {k: [x async for x in v] for k in w}\n",
        "async def f():\n    return [(x async for x in y) for z in w]\n",
        "async def f():\n    return [x for x in [y async for y in z]]\n",
        "async def f():\n    return [x async for x in y]\n",
        "async def f():\n    return [await x for x in y]\n",
        "def f():\n    return [x async for x in y]\n",
        # 3.10-legal syntax that older Pythons lacked
        "match x:\n    case [1, *rest]:\n        pass\n    case {'k': v}:\n        pass\n    case _:\n        pass\n",
        "match = 1\ncase = 2\n",
        "with (open(a) as f, open(b) as g):\n    pass\n",
        "with (open(a)) as f:\n    pass\n",
        "@buttons[0].clicked.connect\ndef f():\n    pass\n",
        "@(lambda f: f)\ndef f():\n    pass\n",
        "x[y := 1]\n", "{y := 1, 2}\n", "if (n := len(a)) > 10:\n    pass\n",
        "def f(a, /, b, *, c):\n    pass\n", "x = 1 if y else 2\n", "print(f'{x=}')\n",
        "def f():\n    return *a, *b\n", "for x in *a, *b:\n    pass\n", "x = {**a, 'b': 1}\n",
    ]
    return out


def _mixed() -> list[str]:
    """Several problems in one file: 3.10 reports the one its parser meets first."""
    features = ["x[*a]\n", 'log(f"{", ".join(x)}")\n', "type A = int\n",
                "try:\n    pass\nexcept* E:\n    pass\n", "def f[T]():\n    pass\n",
                "try:\n    pass\nexcept A, B:\n    pass\n", 'y = t"{a}"\n', "class C[T]:\n    pass\n"]
    out = []
    for first, second in itertools.permutations(features, 2):
        out.append("import os\n" + first + "z = 1\n" + second)
    tails = ['y = "open\n', "y = (1,\n", "y = 1 +\n", "y = 0777\n", "y = $\n", "    y = 1\n"]
    for feature, tail in itertools.product(features[:6], tails):
        out.append(feature + tail)
    return out


def _training_code() -> list[str]:
    """Lines as training scripts write them, with f-strings and PEP 646 subscripts (written after
    the first clean run, to test what the rules had not been tuned on; one message they got
    wrong is fixed)."""
    return [
        'log0(f"step:{step}/{args.iterations} val_loss:{val_loss:.4f} val_bpb:{val_bpb:.4f} "\n'
        '     f"train_time:{training_time_ms:.0f}ms")\n',
        'log0(f"{k}:{v}" for k, v in sorted(vars(args).items()))\n',
        'print(f"model_params:{sum(p.numel() for p in model.parameters())}")\n',
        'log(f"ttt_chunk [{ci+1}/{num_chunks}] bpb={bpb:.6f} time={time.perf_counter()-t0:.1f}s")\n',
        'log(f"{name}: {", ".join(f"{x:.3f}" for x in vals)}")\n',
        'log(f"{name}: {\', \'.join(f\'{x:.3f}\' for x in vals)}")\n',
        'msg = f"{cfg["model"]["dim"]}x{cfg["model"]["layers"]}"\n',
        'msg = f"{cfg[\'model\'][\'dim\']}x{cfg[\'model\'][\'layers\']}"\n',
        'print(f"{"=" * 40}")\n',
        'print(f"{\'=\' * 40}")\n',
        'path = f"{os.environ.get("DATA_PATH", "./data")}/shards"\n',
        'path = f"{os.environ.get(\'DATA_PATH\', \'./data\')}/shards"\n',
        'def f():\n    for i in range(3):\n        if i:\n            print(f"{i:>{width}} {names[i]!r}")\n',
        'x = (\n    f"a {b}"\n    f" c {d["e"]}"\n    " tail"\n)\n',
        'x = f"{a}" if cond else f"{b["c"]}"\n',
        'assert ok, f"bad value {val!r} for {key}"\n',
        'raise SystemExit(f"missing {", ".join(missing)}")\n',
        'table = "\\n".join(f"{k:<20}{v}" for k, v in rows)\n',
        'table = "\\n".join(f"{k:<20}{"-" if v is None else v}" for k, v in rows)\n',
        'header = f"""\n{title}\n{"-" * len(title)}\n"""\n',
        "header = f'''\n{title}\n{'-' * len(title)}\n'''\n",
        'x = f"{x!r:^{w}}" f"{y=}"\n',
        'sizes = {f"{n}": s for n, s in zip(names, sizes)}\n',
        'sizes = {f"{n["id"]}": s for n, s in zip(names, sizes)}\n',
        'with open(f"{out_dir}/{run_id}.txt", "w") as fh:\n    fh.write(f"{log}\\n")\n',
        'with open(f"{out_dir}/{run_id}.txt", "w") as fh:\n    fh.write(f"{"\\n".join(log)}")\n',
        'class A:\n    def __repr__(self):\n        return f"A({self.x!r}, {self.y!r})"\n',
        'class A:\n    def __repr__(self):\n        return f"A({", ".join(map(repr, self.items))})"\n',
        'lambda x: f"{x:08.3f}"\n',
        'x = [f"{i}" for i in range(10) if f"{i}" != "3"]\n',
        'x = [f"{i["k"]}" for i in items]\n',
        'import torch\n@torch.no_grad()\ndef ev():\n    return f"{loss.item():.4f}"\n',
        'def g(*shape: *Ts) -> Array[*Ts]: ...\n',
        'def g[T](x: T) -> list[T]:\n    return [x]\n',
        'class Model[T: nn.Module](Base):\n    pass\n',
        'type Pair[K, V] = tuple[K, V]\n',
        'try:\n    run()\nexcept* RuntimeError as eg:\n    for e in eg.exceptions:\n        print(e)\n',
        'buf = torch.empty(*shape)[*idx]\n',
        'out = x[..., *extra]\n',
        'def f(x):\n    return x[*x.shape[:-1], 0]\n',
        'print(f"{x[*a]}")\n',
        'y = {k: v[*i] for k, v in d.items()}\n',
        'for i in range(n):\n    z = arr[*pos, i]\n',
        'if a:\n    pass\nelif b[*c]:\n    pass\n',
        'with torch.autocast("cuda", dtype=t[*a]):\n    pass\n',
        'q = t"{user} says {msg!r}"\n',
        'try:\n    x()\nexcept ValueError, KeyError:\n    pass\n',
        'def f():\n    try:\n        return 1\n    finally:\n        return 2\n',
        'x = f"{a}"  # comment with "quotes" and {braces}\ny = f"{b["c"]}"\n',
        'x = f"{a:{b}.{c}f}" + f"{d:{e!r}}"\n',
        'x = rf"\\d+{n}\\s" + Rf"{m}\\w"\n',
        'x = f"{a}" b"c"\n',
        'x = f"\\{a}"\n',
        'x = f"{a!r}!r"\n',
        'x = f"{{{a}}}"\n',
        'x = f"{a}}}}"\n',
        'x = f"{{}}"\n',
        'x = f"{ {a: b}[a] }"\n',
        'x = f"{[a for a in b]}"\n',
        'x = f"{(lambda: 1)()}"\n',
        'x = f"{a if b else c}"\n',
        'x = f"{a:{"x" if b else "y"}}"\n',
        'x = f"{a:{\'x\' if b else \'y\'}}"\n',
        'x = f"{\n  a\n}"\n',
        "x = f'''{\n  a\n}'''\n",
        "x = f'''{\n  a  # why\n}'''\n",
        'x = f"{a}" f"{b}" f"{c["d"]}" f"{e}"\n',
    ]


def _headers() -> list[str]:
    """Starred subscripts in statement headers, where 3.10 forces a ':' or does not."""
    return [
        'for v in f(x[*a]):\n pass\n',
        'for v in f(k=x[*a]):\n pass\n',
        'with f(x[*a]):\n pass\n',
        'with f(x[*a]) as g:\n pass\n',
        'with a as f[x[*a]]:\n pass\n',
        'def f() -> g(x[*a]):\n pass\n',
        'def f() -> tuple[int, x[*a]]:\n pass\n',
        'class C(f(x[*a])):\n pass\n',
        'with a, x[*a]:\n pass\n',
        'with (x[*a]):\n pass\n',
        'for v in (x[*a]):\n pass\n',
        'for v in a, x[*a]:\n pass\n',
        'async def f():\n async with x[*a]:\n  pass\n',
        'async def f():\n async for v in x[*a]:\n  pass\n',
        'for v in [x[*a]]:\n pass\n',
        'for v in -f(x[*a]):\n pass\n',
        'for v in (a)(x[*a]):\n pass\n',
        'def f() -> (x[*a]):\n pass\n',
        'def f() -> [x[*a]]:\n pass\n',
        'class C((x[*a])):\n pass\n',
        'for v in x.y[*a]:\n pass\n',
        'for v in (a + x[*a]):\n pass\n',
        'for v in a + (x[*a]):\n pass\n',
        'with a as (x[*a]):\n pass\n',
    ]


def _everywhere() -> list[str]:
    """Source no Python accepts: pgolf must still name the line 3.10 reports."""
    return [
        "x = = 1\n", "def f(:\n    pass\n", "x = (1,\n2\n", "x = [1, 2\ny = 3\n", "x = 1)\n", "x = (1]\n",
        "x = 'abc\n", 'x = """abc\n\n', "x = 1 \\ 2\n", "if x:\ny = 1\n", "if x:\n    y = 1\n  z = 2\n",
        "x = 0777\n", "x = 1__0\n", "x = 0b2\n", "x = 1e\n", "x = 5.abc\n", "x = €\n", "x = a ? b\n",
        "print 'hello'\n", "f() = 1\n", "return 1\n", "break\n", "def f():\n    nonlocal x\n",
        "def f(a, a):\n    pass\n", "def f(a=1, b):\n    pass\n", "x = 1 +\n", "class\n",
        "for x in :\n    pass\n", "lambda: (yield)\n", "x = {**a for a in b}\n", "x = [*a for a in b]\n",
        "await x\n", "def f():\n    x = await y\n", "import\n", "from . import\n", "x = 1 if y\n",
        "del f()\n", "(a, b) += 1\n", "x = 'a' 'b' b'c'\n", "x = u'a' b'b'\n", "x = '\\x4'\n",
        "x = '\\N{NO SUCH NAME}'\n", "x = b'\\x4'\n", "x = '\\u12'\n", "x\ty = 1\n", "  x = 1\n",
        "def f():\n\treturn 1\n        return 2\n", "x = (\n", "x = [\n1,\n", "}\n", "x = 1 <> 2\n",
    ]
