"""The Python-version gate: what in a script needs a newer Python than the target.

No single tool tells the truth about Python 3.10 (libcst and `ast.parse(feature_version=...)`
accept newer syntax), so the gate combines three readings of the source, none of which runs it:
- CPython 3.10's own tokenizer and f-string rules (`lex310`, `fstring310`), for PEP 701 f-strings;
- a libcst tree walk (`syntax_features`, `stdlib_api`) for newer grammar and library names;
- this interpreter's `compile()`, for errors that every Python reports.
It also works out the error CPython 3.10 prints first, in the order 3.10's parser meets them;
tests/audits/pyversion/ checks that against a real CPython 3.10 on a corpus of snippets.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import keyword
import re
import sys
import warnings

import libcst as cst

from audits.pyversion import fstring310, lex310, stdlib_api, syntax_features
from audits.pyversion.syntax_features import Anchor, Feature
from audits.submission import bigstack, trees

MAX_SOURCE = 2_000_000  # characters; a larger source is reported as not analysed
MAX_NESTING = 500  # expression nesting above which libcst is not run (its parser crashes near 2,000)
PEP701 = (3, 12)
SYNTAX, ERROR, STDLIB = "PY_SYNTAX_TOO_NEW", "PY_SYNTAX_ERROR", "PY_STDLIB_TOO_NEW"
HOST = sys.version_info[:2]
_EVERYWHERE = ("(unicode error)", "(value error)", "bytes can only contain", "cannot mix bytes")
_COMMA = "invalid syntax. Perhaps you forgot a comma?"
_END_OPS = {";", "=", ":", ":=", "->", "+=", "-=", "*=", "/=", "//=", "%=", "@=", "&=", "|=", "^=", ">>=",
            "<<=", "**="}
_END_WORDS = {"for", "async", "as", "import", "from"}
_SEPARATORS = {",", ";", "="}
_CHAIN_WORDS = {"not", "and", "or", "is", "in", "if", "else", "lambda", "await"}
_PLAIN_FIELD = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?[ \t]*")
_ROUGH = re.compile(r"[()\[\]{},;=\n]|[-+*/%&|^~<>@.]|\b(?:not|and|or|is|in|if|else|lambda|await)\b")


@dataclasses.dataclass(frozen=True)
class Problem:
    """Something the target Python rejects or warns about, at a 1-based line and 0-based column
    of the analysed source. `severity` "WARN" lowers the rule's default."""

    rule: str
    line: int
    column: int
    message: str
    severity: str | None = None
    first: bool = False  # the error the target Python reports first
    needs: tuple[int, int] | None = None  # the first Python that accepts it


@dataclasses.dataclass(frozen=True)
class Analysis:
    problems: tuple[Problem, ...]
    # What the target Python prints first, its message as Python prints it; None: it compiles.
    first_error: Problem | None


def label(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


@functools.lru_cache(maxsize=16)
def analyse(source: str, target: tuple[int, int] = (3, 10)) -> Analysis:
    """Everything in `source` that Python `target` rejects: syntax, and standard-library names it
    lacks. Never runs the code; never raises on hostile input."""
    if len(source) > MAX_SOURCE:
        note = Problem(SYNTAX, 1, 0, f"not checked: {len(source):,} characters is over the "
                       f"{MAX_SOURCE:,}-character limit of this analysis", severity="WARN")
        return Analysis((note,), None)
    src = lex310.normalize(source)
    if "\0" in src:
        line, col = _Lines(src).place(src.index("\0"))
        bad = Problem(ERROR, line, col, "the source contains a NUL byte; no Python compiles it", first=True)
        return Analysis((bad,), dataclasses.replace(bad, message="source code cannot contain null bytes"))
    return _Analyser(src, target).run()


@dataclasses.dataclass(frozen=True)
class _Err:
    """A syntax error as CPython 3.10 reports it: its message and the file offset it points at.
    Inside an f-string field the message carries the "f-string: " of the parser that raised it."""

    message: str
    pos: int


@dataclasses.dataclass(frozen=True)
class _Stop:
    """A feature 3.10's parser stops at, in file offsets: the token `at`, the error's `pos`."""

    at: int
    pos: int
    message: str
    generic: bool
    compile_stage: bool
    retry: tuple[int, int, int, bool, bool] | None  # a start, value end, b end, bare name, in brackets
    t_string: bool


@dataclasses.dataclass(frozen=True)
class _Region:
    """What one 3.10 parser reads: the file, or `(expression)` built from an f-string field."""

    text: str
    lexed: lex310.Lexed
    field: tuple[int, int] | None = None  # the field expression's file offsets

    @property
    def prefix(self) -> str:
        return "" if self.field is None else "f-string: "

    def to_file(self, offset: int) -> int:
        if self.field is None:
            return offset
        start, end = self.field
        return min(max(start + offset - 1, start - 1), end)

    def to_text(self, offset: int) -> int:
        return offset if self.field is None else offset - self.field[0] + 1


class _Lines:
    def __init__(self, src: str):
        self.starts = [0]
        pos = src.find("\n")
        while pos >= 0:
            self.starts.append(pos + 1)
            pos = src.find("\n", pos + 1)

    def place(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index]


class _Analyser:
    def __init__(self, src: str, target: tuple[int, int]):
        self.src = src
        self.target = target
        self.lines = _Lines(src)
        self.old_fstrings = target < PEP701
        self.spans: dict[int, tuple[int, int]] = {}
        self.stops: list[_Stop] = []

    def run(self) -> Analysis:
        lexed = lex310.tokenize(self.src)
        host = bigstack.run(_host_verdict, self.src)
        problems: list[Problem] = []
        reading = _Reading(None, syntax_features.Walk([], []), [])
        nesting = _nesting(self.src, lexed.tokens)
        if lexed.error is not None:  # the tokens stop there; estimate the rest from the raw text
            nesting = max(nesting, _rough_nesting(self.src[lexed.error.at:]))
        too_deep = Problem(SYNTAX, 1, 0, f"grammar and standard-library checks skipped: an expression "
                           f"nests about {nesting} levels deep; pgolf's parser is safe to {MAX_NESTING}",
                           severity="WARN")
        if nesting > MAX_NESTING:
            problems.append(too_deep)
        else:
            host_line = host[2] if host else None
            lex_line = _line(self.src, lexed.error.pos) if lexed.error else None
            try:
                reading = bigstack.run(_read, self.src, (host_line, lex_line))
            except RecursionError:
                problems.append(too_deep)
        walked, uses, parse_error = reading.walked, reading.uses, reading.error
        uses = [use for use in uses if use.needs > self.target]
        # Per-literal f-string analysis is only needed when some string fails 3.10's rules;
        # node offsets only when something is to be placed (one code generation pass).
        self.strings_error = self._region_error(_Region(self.src, lexed), [])
        check_fstrings = (self.old_fstrings or HOST < PEP701) and self.strings_error is not None
        nodes = walked.anchors(with_atoms=check_fstrings) + [use.node for use in uses]
        if nodes and reading.module is not None:
            try:
                self.spans = trees.positions(reading.module).spans
            except RecursionError:
                problems.append(too_deep)
                walked, uses, check_fstrings = syntax_features.Walk([], []), [], False
        self.stops = sorted((self._stop(f) for f in walked.features
                             if f.needs > self.target and not f.warning), key=lambda s: s.at)

        # Every newer feature explains this interpreter's errors; only those newer than the
        # target are reported.
        newer = [self._feature_problem(f) for f in walked.features if not f.warning]
        if check_fstrings:
            newer += self._fstring_problems(walked.atoms)
        problems += [p for p in newer if p.needs is None or p.needs > self.target]
        problems += [self._feature_problem(f) for f in walked.features if f.warning and f.needs <= self.target]
        for use in uses:
            line, col = self.lines.place(self.spans[id(use.node)][0])
            problems.append(Problem(STDLIB, line, col, use.message(self.target), needs=use.needs))
        problems += self._everywhere(host, newer, parse_error)
        first = self._first(lexed, host, problems)
        return _assemble(problems, first)

    # --- each feature on its own -------------------------------------------------------------

    def _offset(self, anchor: Anchor) -> int:
        node, at_end = anchor
        start, end = self.spans[id(node)]
        return end if at_end else start

    def _stop(self, feature: Feature) -> _Stop:
        at = self._offset((feature.anchor, feature.at_end)) + feature.shift
        pos = at if feature.report is None else self._offset(feature.report)
        retry = None
        if feature.retry is not None:
            r = feature.retry
            retry = (self._offset(r.a_start), self._offset(r.value_end), self._offset(r.b_end),
                     r.bare_name, r.in_brackets)
        return _Stop(at, pos, feature.error, feature.generic, feature.compile_stage, retry, feature.t_string)

    def _feature_problem(self, feature: Feature) -> Problem:
        needs = label(feature.needs)
        pos = self._offset((feature.anchor, feature.at_end)) + feature.shift
        if feature.warning:
            line, col = self.lines.place(pos)
            return Problem(SYNTAX, line, col, f"{feature.what}: Python {needs} warns about it "
                           f"({feature.ref}, SyntaxWarning)", severity="WARN", needs=feature.needs)
        text = f"{feature.what} needs Python {needs} ({feature.ref})"
        if feature.needs > (3, 10):
            stop = self._stop(feature)
            if stop.retry is not None and stop.retry[4]:
                message, pos = _COMMA, stop.retry[0]
            else:
                message, pos = stop.message, stop.pos
            text += f"; CPython 3.10 reports: SyntaxError: {message}"
        line, col = self.lines.place(pos)
        return Problem(SYNTAX, line, col, text, needs=feature.needs)

    def _fstring_problems(self, atoms: list[syntax_features.StringAtom]) -> list[Problem]:
        """Each string literal holding an f-string, tokenized and checked as 3.10 would."""
        problems = []
        for atom in atoms:
            start = self.spans[id(atom.node)][0]
            err = self._local_run(start, atom.in_brackets)
            if err is None:
                continue
            line, col = self.lines.place(err.pos)
            if err.message.startswith(_EVERYWHERE):
                problems.append(Problem(ERROR, line, col, f"no Python accepts this string literal: "
                                        f"SyntaxError: {err.message}"))
                continue
            start_line = self.lines.place(start)[0]
            where = "" if start_line == line else f", in the f-string that starts on line {start_line}"
            problems.append(Problem(SYNTAX, line, col, f"f-string syntax that needs Python 3.12 (PEP 701)"
                                    f"{where}; CPython 3.10 reports: SyntaxError: {err.message}",
                                    needs=PEP701))
        return problems

    def _local_run(self, start: int, in_brackets: bool) -> _Err | None:
        run: list[lex310.Token] = []
        top = _Region(self.src, lex310.Lexed([], None))
        try:
            for tok in lex310.generate(self.src, start, in_brackets):
                if tok.kind != lex310.STRING:
                    return self._run(top, run, tok)
                run.append(tok)
        except lex310.TokenizeError as stop:
            return _Err(stop.error.message, stop.error.pos)
        return None

    # --- the error 3.10 reports first ---------------------------------------------------------

    def _first_parse_error(self, lexed: lex310.Lexed) -> _Err | None:
        stops = [s for s in self.stops if not s.compile_stage]
        if not stops:
            return self.strings_error  # the same reading, already done
        return self._region_error(_Region(self.src, lexed), stops)

    def _region_error(self, region: _Region, stops: list[_Stop]) -> _Err | None:
        """The first error 3.10's parser meets in `region`, in token order: a feature's token, a
        string literal's action (run when the token after the literals is read), a tokenizer error."""
        tokens = region.lexed.tokens
        si = k = 0
        while k < len(tokens):
            tok = tokens[k]
            start, end = region.to_file(tok.start), region.to_file(max(tok.end, tok.start + 1))
            while si < len(stops) and stops[si].at < start:
                si += 1  # inside a string: an f-string field, read with the string
            if si < len(stops) and (stops[si].at == start or tok.kind != lex310.STRING and stops[si].at < end):
                return self._resolve(region, stops[si])
            if tok.kind == lex310.STRING:
                m = _run_end(tokens, k)
                if m == len(tokens):
                    break  # reading the token after the literals fails first
                err = self._run(region, tokens[k:m], tokens[m])
                if err is not None:
                    return err
                k = m
                continue
            k += 1
        error = region.lexed.error
        return None if error is None else self._lex_error(region, error)

    def _lex_error(self, region: _Region, error: lex310.LexError) -> _Err:
        # Raised inside the tokenizer: no "f-string: "; otherwise the field parser adds it.
        prefix = "" if error.sets_exception else region.prefix
        return _Err(prefix + error.message, region.to_file(error.pos))

    def _resolve(self, region: _Region, stop: _Stop) -> _Err:
        if not stop.generic:
            return _Err(region.prefix + stop.message, stop.pos)
        # 3.10's second pass re-reads the statement with its error rules, running the actions of
        # the string literals it passes over.
        if stop.retry is not None:
            a_start, value_end, b_end, bare, in_brackets = stop.retry
            err = self._runs_between(region, value_end, b_end)
            if err is not None:
                return err
            if in_brackets or region.field is not None:
                return _Err(region.prefix + _COMMA, a_start)
            if bare:
                err = self._runs_between(region, value_end, self._star_expressions_end(region, value_end))
                if err is not None:
                    return err
        if stop.t_string:
            err = self._runs_between(region, stop.at, self._star_expressions_end(region, stop.at))
            if err is not None:
                return err
        # A generic "invalid syntax" gives way to a tokenizer error anywhere later in the text.
        error = region.lexed.error
        if error is not None:
            if error.sets_exception:
                return self._lex_error(region, error)
            if error.open_bracket is not None and \
                    _line(region.text, error.open_bracket) < _line(region.text, region.to_text(stop.pos)):
                return self._lex_error(region, error)
        return _Err(region.prefix + "invalid syntax", stop.pos)

    def _runs_between(self, region: _Region, start: int, end: int) -> _Err | None:
        tokens = region.lexed.tokens
        k = 0
        while k < len(tokens) and region.to_file(tokens[k].start) < end:
            if tokens[k].kind == lex310.STRING and region.to_file(tokens[k].start) >= start:
                m = _run_end(tokens, k)
                if m == len(tokens):
                    return None
                err = self._run(region, tokens[k:m], tokens[m])
                if err is not None:
                    return err
                k = m
                continue
            k += 1
        return None

    def _star_expressions_end(self, region: _Region, start: int) -> int:
        """Where pegen's `star_expressions` from `start` must end: the first token at the same
        bracket depth that no expression continues with."""
        depth = 0
        for tok in region.lexed.tokens:
            if region.to_file(tok.start) < start:
                continue
            s = region.text[tok.start:tok.end]
            if tok.kind in (lex310.NEWLINE, lex310.ENDMARKER):
                return region.to_file(tok.start)
            if tok.kind == lex310.OP and s in ("(", "[", "{"):
                depth += 1
            elif tok.kind == lex310.OP and s in (")", "]", "}"):
                if depth == 0:
                    return region.to_file(tok.start)
                depth -= 1
            elif depth == 0 and (tok.kind == lex310.OP and s in _END_OPS or
                                 tok.kind == lex310.NAME and s in _END_WORDS):
                return region.to_file(tok.start)
        return region.to_file(len(region.text))

    def _run(self, region: _Region, run: list[lex310.Token], lookahead: lex310.Token) -> _Err | None:
        """3.10's action for adjacent string literals: decode each, refuse mixed bytes and str,
        parse f-strings. Its errors point at the token after the literals, or into a field."""
        was_bytes = None
        for tok in run:
            text = region.text[tok.start:tok.end]
            letters, body_start, body_end = fstring310.split_prefix(text)
            kind = letters.lower()
            message = None
            if "f" not in kind and "r" not in kind:
                message = fstring310.literal_error(text[body_start:body_end], "b" in kind)
            elif "b" in kind and not text.isascii():
                message = "bytes can only contain ASCII literal characters"
            if message is None and was_bytes is not None and was_bytes != ("b" in kind):
                message = "cannot mix bytes and nonbytes literals"
            was_bytes = "b" in kind
            if message is None and "f" in kind:
                found = fstring310.check(text, functools.partial(self._field, region, tok.start))
                if found is not None:
                    if found.detail is not None:
                        return found.detail
                    message = found.message
            if message is not None:
                return _Err(region.prefix + message, region.to_file(lookahead.start))
        return None

    def _field(self, region: _Region, token_start: int, start: int, end: int) -> fstring310.FstringError | None:
        """3.10 compiles a field's expression as `(expression)` with a parser of its own."""
        span = (region.to_file(token_start + start), region.to_file(token_start + end))
        expression = region.text[token_start + start:token_start + end]
        if _plain_name(expression):
            return None  # `{x}`, `{self.lr}`, `{f()}`: nothing 3.10 could refuse
        sub = "(" + expression + ")\n"
        inner = _Region(sub, lex310.tokenize(sub), span)
        stops = [s for s in self.stops if span[0] <= s.at < span[1] and not s.compile_stage]
        err = self._region_error(inner, stops)
        return None if err is None else fstring310.FstringError(err.message, err)

    def _first(self, lexed: lex310.Lexed, host, problems: list[Problem]) -> Problem | None:
        """What the target Python prints first. For targets before 3.12 this follows 3.10's
        parser; newer targets get the earliest problem."""
        errors = [p for p in problems if p.rule in (SYNTAX, ERROR) and p.severity != "WARN"]
        if not self.old_fstrings:
            first = min(errors, key=lambda p: (p.line, p.column), default=None)
            return first
        err = self._first_parse_error(lexed)
        host_parse = next((p for p in problems if p.rule == ERROR and host and host[0] == "parse"
                           and p.line == host[2]), None)
        if err is not None:
            line, col = self.lines.place(err.pos)
            if host_parse is not None and host_parse.line < line:
                return dataclasses.replace(host_parse, message=host[1])
            # Blamed on a newer feature unless the error is one every Python reports.
            everywhere = err.message.startswith(_EVERYWHERE) or host_parse is not None and host_parse.line == line
            return Problem(ERROR if everywhere else SYNTAX, line, col, err.message)
        if host_parse is not None:
            return dataclasses.replace(host_parse, message=host[1])
        late = [(self.lines.place(s.pos), s.message) for s in self.stops if s.compile_stage]
        if host and host[0] == "compile":
            late.append(((host[2], host[3]), host[1]))
        if not late:
            return None
        (line, col), message = min(late)
        rule = SYNTAX if any(p.rule == SYNTAX and p.line == line for p in problems) else ERROR
        return Problem(rule, line, col, message)

    # --- errors every Python reports ----------------------------------------------------------

    def _everywhere(self, host, newer: list[Problem], parse_error) -> list[Problem]:
        """This interpreter's compile error, unless a feature newer than it explains it (one at
        or before the error when parsing, at its line when compiling)."""
        out = []
        if host:
            stage, message, line, col = host
            explained = any(
                p.rule == SYNTAX and p.severity != "WARN" and p.needs is not None and p.needs > HOST
                and (p.line <= line if stage == "parse" else p.line == line) for p in newer)
            if not explained:
                out.append(Problem(ERROR, line, col, f"no Python compiles this: SyntaxError: {message} "
                                   f"(as Python {label(HOST)} reports it)"))
        elif parse_error is not None:
            line, col, message = parse_error
            out.append(Problem(ERROR, line, col, f"libcst, pgolf's parser, cannot read this statement "
                               f"({message}) though Python {label(HOST)} compiles it; the grammar checks "
                               f"after it are incomplete", severity="WARN"))
        return out


def _assemble(problems: list[Problem], first: Problem | None) -> Analysis:
    seen = set()
    unique = []
    for p in problems:
        key = (p.rule, p.line, p.column, p.message)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    if first is not None:
        match = next((i for i, p in enumerate(unique)
                      if p.line == first.line and p.rule in (SYNTAX, ERROR) and p.severity != "WARN"), None)
        if match is None:
            unique.append(dataclasses.replace(first, message=f"the first error CPython reports: "
                                              f"SyntaxError: {first.message}", first=True))
        else:
            unique[match] = dataclasses.replace(unique[match], first=True)
    unique.sort(key=lambda p: (p.line, p.column, p.rule))
    return Analysis(tuple(unique), first)


def _run_end(tokens: list[lex310.Token], k: int) -> int:
    """The index after the adjacent string literals starting at `k`."""
    while k < len(tokens) and tokens[k].kind == lex310.STRING:
        k += 1
    return k


def _plain_name(expression: str) -> bool:
    """A dotted name, maybe called with no arguments, none of its parts a keyword."""
    match = _PLAIN_FIELD.fullmatch(expression)
    return match is not None and not any(
        keyword.iskeyword(part) for part in match.group(1).split(".") if part not in ("True", "False", "None"))


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _nesting(src: str, tokens: list[lex310.Token]) -> int:
    """An upper estimate of how deep the syntax tree nests: per bracket level, the operators
    chained since the last separator, added up across open brackets."""
    deepest = 0
    levels = [0]  # nesting reached when each open bracket opened
    chain = [0]  # operators chained at each level since its last separator
    for tok in tokens:
        text = src[tok.start:tok.end]
        if tok.kind == lex310.OP:
            if text in ("(", "[", "{"):
                chain[-1] += 1
                levels.append(levels[-1] + chain[-1])
                chain.append(0)
            elif text in (")", "]", "}"):
                if len(levels) > 1:
                    levels.pop()
                    chain.pop()
            elif text in _SEPARATORS:
                chain[-1] = 0
            else:
                chain[-1] += 1
        elif tok.kind == lex310.NAME and text in _CHAIN_WORDS:
            chain[-1] += 1
        elif tok.kind == lex310.NEWLINE:
            levels, chain = [0], [0]
        deepest = max(deepest, levels[-1] + chain[-1])
    return deepest


def _rough_nesting(text: str) -> int:
    """`_nesting` for text 3.10 cannot tokenize: bracket depth plus the longest run of operator
    characters and words between separators, string quotes not understood."""
    depth = deepest = run = 0
    for word in _ROUGH.findall(text):
        if word in "([{":
            depth += 1
            run += 1
        elif word in ")]}":
            depth = max(depth - 1, 0)
        elif word in ",;=\n":
            run = 0
        else:
            run += 1
        deepest = max(deepest, depth + run)
    return deepest


@dataclasses.dataclass
class _Reading:
    """libcst's reading of the source: its tree (None when not even a prefix parsed), the
    features and library uses found, and its parse error as (line, column, message)."""

    module: cst.Module | None
    walked: syntax_features.Walk
    uses: list[stdlib_api.Use]
    error: tuple[int, int, str] | None = None


def _read(src: str, error_lines: tuple[int | None, ...]) -> _Reading:
    """When the whole file does not parse, the top-level statements before the first error that
    another reader found (`error_lines`; libcst places its tokenizer errors at 1:1) are read, so
    the features there still count: 3.10 meets them first."""
    error = None
    try:
        module = trees.cst_module(src)
    except Exception as exc:  # ParserSyntaxError, or CSTValidationError (e.g. "b'' ''")
        error = (getattr(exc, "raw_line", 1), getattr(exc, "raw_column", 0),
                 getattr(exc, "message", str(exc)).splitlines()[0])
        lines = [line for line in (error[0], *error_lines) if line is not None and line > 1]
        module = _parse_prefix(src, max(lines)) if lines else None
    if module is None:
        return _Reading(None, syntax_features.Walk([], []), [], error)
    return _Reading(module, syntax_features.walk(module), stdlib_api.uses(module), error)


def _parse_prefix(src: str, error_line: int) -> cst.Module | None:
    """The lines before `error_line`, or before one of the three top-level statements above it,
    as far as libcst reads them."""
    lines = src.splitlines(keepends=True)
    cuts = [min(error_line, len(lines)) - 1]
    for index in range(cuts[0] - 1, 0, -1):
        if len(cuts) == 4:
            break
        if lines[index][:1] not in ("", " ", "\t", "\n", "#", ")", "]", "}") \
                and not lines[index - 1].rstrip().endswith("\\"):
            cuts.append(index)
    for cut in cuts:
        if cut > 0:
            try:
                return cst.parse_module("".join(lines[:cut]))
            except Exception:  # the cut fell inside a statement; try an earlier one
                continue
    return None


def _host_verdict(src: str) -> tuple[str, str, int, int] | None:
    """This interpreter's compile error, if any: (stage "parse" or "compile", message, line,
    column). Compiling runs nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stage = "parse"
        try:
            tree = trees.ast_module(src)
            stage = "compile"
            compile(tree, "<pgolf>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            return stage, exc.msg, exc.lineno or 1, max((exc.offset or 1) - 1, 0)
        except (MemoryError, RecursionError, ValueError) as exc:
            return stage, f"too complex to compile ({type(exc).__name__})", 1, 0
    return None
