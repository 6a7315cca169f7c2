"""Per-position scoring loops outside the interpreter's reach: native code (C/C++) that the
Python loads (ctypes, cffi, a torch extension), shipped as a file or embedded in a string, and
Python loops over gathered arrays (`for i in range(n): tid = int(targets[i])`). A bounded,
static, lexical read: nothing is compiled or run.

In a loop over positions `i`, a token read at the position (`tok = tokens[i]`) that is consumed
into the model's state only after the position's outputs were written is the token those outputs
predict: the target. Two readings follow:
  gate    a branch on a table looked up at that token (`boundary_lut[tok]`) decides the outputs
          written for the position (`hint_prob[i] = ...`): the hint reads the answer;
  spread  the position's loss divided by a count looked up at that token (`nll[i] / lens[tid]`),
          in code that mixes probabilities (log-sum-exp, `lam` and `1 - lam`): the token's
          probability spread over its own bytes and mixed per byte.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import functools
import re

from audits.submission import trees

NATIVE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hpp")
SOURCE_LIMIT = 1_000_000  # characters of one native source read
MAX_SOURCES = 16
MAX_LOOPS = 2_000  # loops read per source
MAX_LOOP_TEXT = 2 * SOURCE_LIMIT  # characters of their bodies read per source
# Python that loads native code: ctypes, cffi, torch's extension builders.
_LOADS = re.compile(r"(?m)^[^#\n]*\b(CDLL|PyDLL|cdll\.LoadLibrary|LoadLibrary|ffi\.dlopen|ffi\.verify|"
                    r"load_inline|cpp_extension\.load)\s*\(")
_TRIPLE = re.compile(r"('''|\"\"\")(.*?)\1", re.S)
_ASSIGN = re.compile(r"(?<![\w\]\.>=!<])(\w+)\s*=(?!=)\s*")
_C_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "else", "do"}
# A mixture of two probabilities: a sum of exponentials (log-sum-exp, `_has_mixture`), logaddexp,
# log1p(exp(..)), or a weight and its complement (`1 - lam`).
_MIXTURE = re.compile(r"logaddexp|log1p\s*\(\s*(?:\w+\.)?exp\s*\(|\(\s*1(?:\.0*)?\s*-\s*\w+\s*\)")
_EXP_CALL = re.compile(r"\bexp\s*\(")
_PLUS_EXP = re.compile(r"\)\s*\+\s*(?:\w+\.)?exp\s*\(")
_STATEMENT_END = re.compile(r"[;\n]")


@dataclasses.dataclass(frozen=True)
class Hit:
    kind: str  # "gate" or "spread"
    file: str  # the native file, or the Python script that holds the code
    line: int  # the branch or the division
    token_line: int  # where the token is read at the position
    text: str  # the line at `line`, stripped
    language: str  # "C" or "Python"
    outputs: tuple[str, ...] = ()  # the arrays written for the position under the branch


@dataclasses.dataclass(frozen=True)
class Source:
    file: str
    text: str
    first_line: int  # the line of `file` where `text` begins
    loader: str  # the script that loads it


def native_sources(scripts: dict[str, str], files: dict[str, str]) -> list[Source]:
    """Native code that a script of the run loads: a shipped source whose name or stem the loading
    script mentions, or a string literal holding C (`#include`) in a loading script. `scripts`:
    the run's Python sources; `files`: the folder's native sources by path."""
    out = []
    for rel, source in sorted(scripts.items()):
        if not _LOADS.search(source):
            continue
        for path, text in sorted(files.items()):
            name = path.rsplit("/", 1)[-1]
            if re.search(rf"\b{re.escape(name.rsplit('.', 1)[0])}\b", source):
                out.append(Source(path, text[:SOURCE_LIMIT], 1, rel))
        out += [Source(rel, text, line, rel) for line, text in _embedded(source)]
    unique = {(s.file, s.first_line): s for s in out}
    return list(unique.values())[:MAX_SOURCES]


def _embedded(source: str) -> list[tuple[int, str]]:
    """Triple-quoted literals that hold C (read from the text: the script may need a newer
    Python than the one auditing it)."""
    out = []
    for m in _TRIPLE.finditer(source):
        if "#include" in m.group(2) and len(out) < MAX_SOURCES:
            out.append((source.count("\n", 0, m.start(2)) + 1, m.group(2)[:SOURCE_LIMIT]))
    return out


def read_native(source: Source) -> list[Hit]:
    code = _blank_comments_and_strings(source.text)
    mixture = _has_mixture(code)
    hits = []
    for var, body, start in _c_loops(code):
        hits += _c_loop(source, code, var, body, start, mixture)
    return hits


def _has_mixture(text: str) -> bool:
    """Whether `text` mixes two probabilities. A sum of exponentials is `exp(..) + exp(` within one
    statement line: found in one pass over the `exp(` calls, the `) + exp(` joins and the `;` and
    newlines between them (the pattern `exp\\s*\\([^;\\n]*\\)...` would retry the rest of the
    line from every `exp(`, quadratic in a long line)."""
    if _MIXTURE.search(text):
        return True
    events = sorted([(m.end(), 0) for m in _EXP_CALL.finditer(text)]
                    + [(m.start(), 1) for m in _STATEMENT_END.finditer(text)]
                    + [(m.start(), 2) for m in _PLUS_EXP.finditer(text)])
    call_open = False  # an `exp(` opened since the last `;` or newline
    for _, kind in events:
        if kind == 0:
            call_open = True
        elif kind == 1:
            call_open = False
        elif call_open:
            return True
    return False


def _blank_comments_and_strings(text: str) -> str:
    """The C text with comments and literals blanked, newlines kept (lines stay where they are).
    A comment or literal left open is blanked to the end (a pattern looking for its end from
    every `/*` or quote would be quadratic in a text of unclosed ones)."""
    return _COMMENT_OR_LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


# A literal left open runs to its line's end, as a comment left open runs to the text's end
_COMMENT_OR_LITERAL = re.compile(r"//[^\n]*|/\*(?:.*?\*/|.*)|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?",
                                 re.S)


def _c_loops(code: str):
    """(loop variable, body, body offset) of each `for (v = ...; ...)` loop, at most MAX_LOOPS,
    and no more once the bodies read add up to MAX_LOOP_TEXT characters (nested loops read the
    same text again)."""
    brackets = _Brackets(code)
    read = 0
    for n, m in enumerate(re.finditer(r"\bfor\s*\(", code)):
        if n >= MAX_LOOPS or read >= MAX_LOOP_TEXT:
            return
        header_end = brackets.close(m.end() - 1)
        if header_end < 0:
            continue
        init = code[m.end():header_end - 1].split(";", 1)[0]
        var = re.search(r"(\w+)\s*=(?!=)", init)
        brace = _OPEN_BRACE.match(code, header_end)
        if var is None or brace is None:
            continue
        start = brace.end() - 1
        end = brackets.close(start)
        if end > 0:
            read += end - start
            yield var.group(1), code[start:end], start


class _Brackets:
    """Where the bracket that closes each `(` and `{` of a text is, found in one pass: the
    readers ask for many, and scanning ahead from each would be quadratic in nested code."""

    def __init__(self, text: str):
        self._closes: dict[int, int] = {}  # an opening bracket's index: the index just past its close
        stacks: dict[str, list[int]] = {"(": [], "{": []}
        for m in re.finditer(r"[(){}]", text):
            ch = m.group()
            if ch in stacks:
                stacks[ch].append(m.start())
            else:
                stack = stacks["(" if ch == ")" else "{"]
                if stack:
                    self._closes[stack.pop()] = m.end()

    def close(self, at: int) -> int:
        """The index just past the bracket that closes the one at `at`, or -1."""
        return self._closes.get(at, -1)


_OPEN_BRACE = re.compile(r"\s*\{")
_ELSE = re.compile(r"\s*else\s+if\s*\(|\s*else\b")
_IF = re.compile(r"\bif\s*\(")
_WORD = re.compile(r"\b\w+\b")
_OUTPUTS_READ = 16  # writes read under one branch; past them it is never taken as silenced


def _c_loop(source: Source, code: str, v: str, body: str, offset: int, mixture: bool) -> list[Hit]:
    """The gates and spreads of one loop over positions `v`. Each piece of the body is found once
    (brackets, statement ends, names, writes) and each branch looked up in them: slicing the
    body at every `if` would be quadratic in nested and long bodies."""
    assigns = [a for a in _assignments(body) if a[0] not in _C_KEYWORDS]
    at_position = re.compile(rf"^(?:\([^()]*\)\s*)?\w+\s*\[\s*{re.escape(v)}\s*\]\s*$")
    tokens = {name: pos for name, rhs, pos in assigns if at_position.match(rhs.strip())}
    looked_up = _derived(assigns, tokens)
    if not looked_up:
        return []
    line = _line_of(source, code, offset)
    hits = []
    last_call = _last_calls_passing(body, set(looked_up.values()))  # token: where the last call passed it starts
    ends = _BlockEnds(body)
    mentions = [(m.start(), m.group()) for m in _WORD.finditer(body) if m.group() in looked_up]
    mention_at = [at for at, _ in mentions]
    writes = [(m.start(), m.group(1)) for m in
              re.finditer(rf"\b(\w+)\s*\[\s*{re.escape(v)}\s*\]\s*=(?!=)", body)]
    write_at = [at for at, _ in writes]
    for m in _IF.finditer(body):
        cond_end = ends.brackets.close(m.end() - 1)
        first = bisect.bisect_left(mention_at, m.end())
        if cond_end < 0 or first == len(mentions) or mention_at[first] >= cond_end:
            continue
        block_end = ends.of(cond_end)
        # a write never spans the `)` before the block or the `;` or `}` that ends it
        low, high = bisect.bisect_left(write_at, cond_end), bisect.bisect_left(write_at, block_end)
        token = looked_up[mentions[first][1]]
        if low < high and block_end <= last_call.get(token, -1):
            outputs = [name for _, name in writes[low:min(high, low + _OUTPUTS_READ)]]
            if high - low > _OUTPUTS_READ:
                outputs.append("")  # no channel's name: the reading is never silenced
            hit = _hit(source, "gate", line(m.start()), line(tokens[token]), "C")
            hits.append(dataclasses.replace(hit, outputs=tuple(dict.fromkeys(outputs))))
    if mixture:
        for before, divisor, at in _divisions(body, v):
            if divisor in looked_up and not _mentions(before, looked_up):
                hits.append(_hit(source, "spread", line(at), line(tokens[looked_up[divisor]]), "C"))
    return hits


_STATEMENT_PART = re.compile(r"[^;{}=]+")
_DIVISOR = re.compile(r"/\s*(?:\([\w\s]+\)\s*)?(\w+)")  # `/ n`, `/ (float) n`
_CALL = re.compile(r"\b\w+\s*\(")


def _divisions(body: str, v: str):
    """(text before the `/`, divisor, its offset) for a value read at position `v` then divided, at
    most one per run of text free of `;{}=`: the last `x[v]` whose first `/` after it, in that
    run, is followed by a divisor. One pass per run: a single pattern for these
    (`[^;{}=]*\\b\\w+\\s*\\[v\\][^;{}=/]*/...`), tried from every place, would be quadratic
    in a long run."""
    at_position = re.compile(rf"\b\w+\s*\[\s*{re.escape(v)}\s*\]")
    for part in _STATEMENT_PART.finditer(body):
        start, end = part.span()
        divided: dict[int, re.Match | None] = {}  # the first `/` after a read: its divisor
        for read_end in reversed([m.end() for m in at_position.finditer(body, start, end)]):
            slash = body.find("/", read_end, end)
            if slash < 0:
                continue
            if slash not in divided:
                divided[slash] = _DIVISOR.match(body, slash, end)
            if divided[slash] is not None:
                yield body[start:slash], divided[slash].group(1), divided[slash].start(1)
                break


def _last_calls_passing(body: str, tokens) -> dict[str, int]:
    """For each of `tokens`, where the last call `f(... token` in the body starts (absent if none):
    a call whose `(` comes before a whole-word `token` with no `;` between them. One pass for all
    tokens: a pattern searched from each `if`, then a pass per token, would be quadratic in the
    length of a statement or in the number of tokens."""
    last: dict[str, int] = {}
    for part in re.finditer(r"[^;]+", body):
        start, end = part.span()
        used = {m.group(): m.start() for m in _WORD.finditer(body, start, end) if m.group() in tokens}
        if not used:
            continue
        calls = [(m.end(), m.start()) for m in _CALL.finditer(body, start, end)]
        for token, use in used.items():  # the last call whose `(` is at or before the last use
            k = bisect.bisect_right(calls, (use, len(body)))
            if k:
                last[token] = calls[k - 1][1]
    return last


def _assignments(body: str) -> list[tuple[str, str, int]]:
    """(name, value, offset) of each `name = value` in a C body, in order: the value runs to the
    first `;`, or `,` before a name, a `}`, a line's end or the body's end, and never across a
    brace. Where each value ends is found in one pass from the back: a pattern scanning ahead
    from every `=` would be quadratic in a long body."""
    stop = [len(body)] * (len(body) + 1)  # the first `;`, brace or such `,` at or after each place
    after = len(body)  # the first character past the current run of spaces: its place
    newline = False  # whether that run holds a line's end
    for i in range(len(body) - 1, -1, -1):
        ch = body[i]
        if ch in ";{}" or ch == "," and (newline or after == len(body) or body[after] == "}"
                                         or body[after].isalnum() or body[after] == "_"):
            stop[i] = i
        else:
            stop[i] = stop[i + 1]
        if ch.isspace():
            newline = newline or ch == "\n"
        else:
            after, newline = i, False
    out, pos = [], 0
    while (m := _ASSIGN.search(body, pos)) is not None:
        end = stop[m.end()]
        if end < len(body) and body[end] in ";,":
            out.append((m.group(1), body[m.end():end], m.start()))
            pos = end
        else:
            pos = m.start() + 1
    return out


def _derived(assigns, tokens: dict[str, int]) -> dict[str, str]:
    """Names computed from a table looked up at a position's token, each with that token's name
    (the first token, in the order they are read, that the value indexes a table with)."""
    order = {token: k for k, token in enumerate(tokens)}
    names = list(tokens)
    out: dict[str, str] = {}
    for _ in range(4):  # a few steps of propagation: nb = len + (space ? 1 : 0)
        for name, rhs, _pos in assigns:
            if name in tokens or name in out:
                continue
            indexed = [order[w] for w in _INDEXED.findall(rhs) if w in order]
            if indexed:
                out[name] = names[min(indexed)]
            else:
                hit = _mentions(rhs, out)
                if hit:
                    out[name] = out[hit]
    return out


_INDEXED = re.compile(r"\w+\s*\[\s*(\w+)\s*\]")  # `table[name]`: the name


def _mentions(text: str, names) -> str | None:
    return next((n for n in re.findall(r"\b\w+\b", text) if n in names), None)


class _BlockEnds:
    """The end of the statement or block an `if (...)` controls, with its `else` branches, for
    each place after a condition; every answer is kept, so a chain of `else if` is walked once
    (and without recursion: a long chain is no deeper than a short one)."""

    def __init__(self, body: str):
        self.body = body
        self.brackets = _Brackets(body)
        self._semicolons = [m.start() for m in re.finditer(";", body)]
        self._known: dict[int, int] = {}

    def of(self, after: int) -> int:
        walked: list[int] = []
        end = self._known.get(after)
        while end is None:
            walked.append(after)
            stop = self._statement_end(after)
            tail = _ELSE.match(self.body, stop) if stop > 0 else None
            if stop <= 0:
                end = len(self.body)
            elif tail is None:
                end = stop
            elif tail.group(0).endswith("("):  # else if (...): the next branch's end is this one's
                after = self.brackets.close(tail.end() - 1)
                end = len(self.body) if after < 0 else self._known.get(after)
            else:
                after = tail.end()
                end = self._known.get(after)
        for place in walked:
            self._known[place] = end
        return end

    def _statement_end(self, after: int) -> int:
        """Just past the `{...}` block or the statement at `after`; 0 or less where none ends."""
        brace = _OPEN_BRACE.match(self.body, after)
        if brace:
            return self.brackets.close(brace.end() - 1)
        k = bisect.bisect_left(self._semicolons, after)
        return self._semicolons[k] + 1 if k < len(self._semicolons) else 0


def _line_of(source: Source, code: str, offset: int):
    """Line numbers in the file for positions of a loop's body that starts at `offset`."""
    newlines = _newlines(code)

    def line(pos: int) -> int:
        return source.first_line + bisect.bisect_left(newlines, offset + pos)
    return line


@functools.lru_cache(maxsize=2)
def _newlines(text: str) -> list[int]:
    return [m.start() for m in re.finditer("\n", text)]


@functools.lru_cache(maxsize=2)
def _lines(text: str) -> list[str]:
    return text.splitlines()


def _hit(source: Source, kind: str, line: int, token_line: int, language: str) -> Hit:
    lines = _lines(source.text)
    index = line - source.first_line
    text = lines[index].strip() if 0 <= index < len(lines) else ""
    return Hit(kind, source.file, line, token_line, text[:200], language)


def read_python(rel: str, source: str) -> list[Hit]:
    """Spreads in Python loops over gathered arrays, in functions that mix probabilities; each
    with the name of the function it is in (for the caller's reachability check)."""
    try:
        tree = trees.ast_module(source)  # the parse every reader shares
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source.splitlines()
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not _has_mixture("\n".join(lines[fn.lineno - 1:fn.end_lineno])):
            continue
        for loop in ast.walk(fn):
            if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name):
                out += [(fn.name, hit) for hit in _python_loop(rel, lines, loop)]
    return out


def _python_loop(rel: str, lines: list[str], loop: ast.For) -> list[Hit]:
    v = loop.target.id
    assigns = [(node.targets[0].id, node.value, node.lineno) for node in ast.walk(loop)
               if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)]
    tokens = {name: line for name, value, line in assigns if _at_position(value, v)}
    looked_up: dict[str, str] = {}
    for _ in range(4):
        for name, value, _line in assigns:
            if name in tokens or name in looked_up:
                continue
            names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
            index = [s.slice.id for s in ast.walk(value) if isinstance(s, ast.Subscript)
                     and isinstance(s.slice, ast.Name) and s.slice.id in tokens]
            if index:
                looked_up[name] = index[0]
            elif names & set(looked_up):
                looked_up[name] = looked_up[sorted(names & set(looked_up))[0]]
    hits = []
    for node in ast.walk(loop):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            right = {n.id for n in ast.walk(node.right) if isinstance(n, ast.Name)}
            left = {n.id for n in ast.walk(node.left) if isinstance(n, ast.Name)}
            divisor = sorted(right & set(looked_up))
            if divisor and (left & set(tokens) or _at_position(node.left, v)) and not left & set(looked_up):
                text = lines[node.lineno - 1].strip() if node.lineno <= len(lines) else ""
                hits.append(Hit("spread", rel, node.lineno, tokens[looked_up[divisor[0]]], text[:200], "Python"))
    return hits


def _at_position(node: ast.AST, v: str) -> bool:
    """`arr[v]`, possibly converted or negated: `int(targets[i])`, `-float(nll[i])`."""
    while True:
        if isinstance(node, ast.UnaryOp):
            node = node.operand
        elif isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.func, ast.Name):
            node = node.args[0]
        else:
            break
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id == v


def hits(sub, run: tuple[str, ...]) -> list[Hit]:
    """Every reading in the code the run executes: native code its scripts load, and the loops of
    its scripts' functions that the run calls."""
    scripts = {rel: sub.scripts[rel].source for rel in run
               if rel in sub.scripts and sub.scripts[rel].source is not None}
    files = {}
    for entry in sub.entries:
        if entry.kind == "file" and entry.rel.lower().endswith(NATIVE_SUFFIXES) and len(files) < MAX_SOURCES:
            try:
                with open(sub.root / entry.rel, "rb") as handle:
                    files[entry.rel] = handle.read(SOURCE_LIMIT).decode("utf-8", "replace")
            except OSError:
                continue
    return _hits(tuple(sorted(scripts.items())), tuple(sorted(files.items())))


@functools.lru_cache(maxsize=4)
def _hits(scripts: tuple[tuple[str, str], ...], files: tuple[tuple[str, str], ...]) -> list[Hit]:
    out = [hit for source in native_sources(dict(scripts), dict(files)) for hit in read_native(source)]
    called = "\n".join(source for _, source in scripts)
    is_called: dict[str, bool] = {}  # a function's name: whether a script calls it (one search a name)
    for rel, source in scripts:
        for name, hit in read_python(rel, source):
            if name not in is_called:
                is_called[name] = re.search(rf"(?<!def )\b{re.escape(name)}\s*\(", called) is not None
            if is_called[name]:
                out.append(hit)
    first = {}  # one reading per loop's token: one cause, one finding
    for hit in out:
        first.setdefault((hit.kind, hit.file, hit.token_line), hit)
    return list(first.values())
