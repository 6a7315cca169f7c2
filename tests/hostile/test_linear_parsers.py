"""Inputs built to make a backtracking pattern quadratic, through the log parser and the C reader,
each in a separate process. A log line is 400 KB, a loop body 300 KB: a quadratic pattern would
take minutes to hours on them, a linear reader takes a fraction of a second. The process's time
limit only guards against a hang; it measures nothing."""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import assume, given, settings
from hypothesis import strategies as st

GUARD_S = 120
SIZE = 400_000

# (what the line starts with, the run that fills it): each was quadratic before
LINES = [
    ("step:1/2 train_loss:1.0 ", "a"),  # a field name tried at every letter
    ("1/2 train_loss:1.0 ", "x_"),
    ("x", " "),  # the metric's name before optional spaces
    ("gptq:reserving 1 s", " "),  # text before an optional effective window and spaces
    ("Serialized model ", " "),  # a name after optional spaces
    ("Total submission size ", " "),
    ("step:1/2 train_loss:1.0 val_loss:1 ", "a:"),
]

_SCRIPT = """
import sys
from audits.submission.logparse import parse_log
prefix, run, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
line = prefix + run * (size // len(run)) + "!"
log = parse_log("\\n".join([line] * 2 + ["step:1/2 train_loss:2.5 train_time:10ms"]), "x.log")
print(len(log.steps))
"""


def test_every_log_line_parses_in_linear_time():
    for prefix, run in LINES:
        done = subprocess.run([sys.executable, "-c", _SCRIPT, prefix, run, str(SIZE)],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (prefix, done.stderr[-2000:])
        assert int(done.stdout) >= 1, prefix  # the last line, at least, is a step


_C_SCRIPT = """
import sys
from audits.legality import native
body = "{" + sys.argv[1] * (int(sys.argv[2]) // len(sys.argv[1])) + "}"
print(len(native._assignments(body)))
"""


def test_a_long_c_loop_body_is_read_in_linear_time():
    """A 300 KB loop body of assignments with no `;`: a pattern scanning ahead from every `=` for
    the value's end would be quadratic in it."""
    # values that never end (no `;` or `,`) are no assignments; `a = b, ` repeated is one each
    for run, found in (("x = 1 ", 0), ("x =      ", 0), ("a = b, ", 300_000 // 7)):
        done = subprocess.run([sys.executable, "-c", _C_SCRIPT, run, "300000"],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (run, done.stderr[-2000:])
        assert int(done.stdout) == found, run


# The assignment pattern the C reader used: its answers, on small bodies, are the reference.
_REFERENCE = re.compile(r"(?<![\w\]\.>=!<])(\w+)\s*=(?!=)\s*([^;{}]*?)(?=[;,]\s*(?:\w|$|\n|})|;)")


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(["a", "b1", "_x", " ", "\n", "\t", "=", "==", ";", ",", "{", "}", "(",
                                 ")", "[", "]", ".", ">", "!", "<", "+", "x[i]", "1"]), max_size=40).map("".join))
def test_the_c_readers_assignments_are_those_of_the_pattern_it_replaced(body):
    from audits.legality import native
    expected = [(m.group(1), m.group(2), m.start()) for m in _REFERENCE.finditer(body)]
    assert native._assignments(body) == expected


# The C reader's division and call patterns, each tried from every place: their answers on small
# bodies are the reference for the one-pass readers that replaced them.
_C_PIECES = ["a", "i", "n", "x[i]", "x[ i ]", "[", "]", " ", "\n", "/", "(", ")", "(float)", ";", "{",
             "}", "=", "f(", "+", ",", "1"]


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(_C_PIECES), max_size=30).map("".join))
def test_the_c_readers_divisions_are_those_of_the_pattern_it_replaced(body):
    from audits.legality import native
    old = r"([^;{}=]*\b\w+\s*\[\s*i\s*\][^;{}=/]*)/\s*(?:\([\w\s]+\)\s*)?(\w+)"
    expected = [(m.group(1), m.group(2), m.start(2)) for m in re.finditer(old, body)]
    assert list(native._divisions(body, "i")) == expected


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(_C_PIECES), max_size=30).map("".join))
def test_the_c_readers_calls_are_those_of_the_pattern_it_replaced(body):
    from audits.legality import native
    last = native._last_calls_passing(body, {"n"}).get("n", -1)
    for cut in [0] + [k + 1 for k, ch in enumerate(body) if ch in ";}"]:  # a statement's or block's end
        expected = re.search(r"\b\w+\s*\([^;]*\bn\b", body[cut:]) is not None
        assert (cut <= last) == expected


_C_LOOP_SCRIPT = """
import sys
from audits.legality import native
run, size = sys.argv[1], int(sys.argv[2])
code = ("for (i = 0; i < n; i++) { t = x[i]; b = w[t]; if (b > 0) { y[i] = 1; } "
        + run * (size // len(run)) + "; consume(t); }")
source = native.Source("k.c", code, 1, "train_gpt.py")
print(len(native._c_loop(source, code, "i", code[code.index("{"):], code.index("{"), True)))
"""


def test_a_long_c_statement_is_read_in_linear_time():
    """A 300 KB statement in a loop that reads a token: a division pattern scanning the rest of
    the statement from every place, or a call pattern from every `f(`, would be quadratic in it."""
    for run in ("a ", "x[i] ", "f(", "a/"):
        done = subprocess.run([sys.executable, "-c", _C_LOOP_SCRIPT, run, "300000"],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (run, done.stderr[-2000:])
        assert int(done.stdout) == 1, run  # the gate on `t`, whose token the call after it takes


# The mixture pattern the native reader used: its answers, on small texts, are the reference.
_MIXTURE_REFERENCE = re.compile(r"\bexp\s*\([^;\n]*\)\s*\+\s*(?:\w+\.)?exp\s*\(|logaddexp|"
                                r"log1p\s*\(\s*(?:\w+\.)?exp\s*\(|\(\s*1(?:\.0*)?\s*-\s*\w+\s*\)")


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(["exp", "exp(", "exp (", "np.", "a", "x1", " ", "\n", ";", "(", ")",
                                 "+", ") + exp(", "log1p(", "1 - lam", "(1", "-", ".", "logaddexp"]),
                max_size=30).map("".join))
def test_the_native_readers_mixtures_are_those_of_the_pattern_it_replaced(text):
    from audits.legality import native
    assert native._has_mixture(text) == (_MIXTURE_REFERENCE.search(text) is not None)


_MIXTURE_SCRIPT = """
import sys
from audits.legality import native
run, size = sys.argv[1], int(sys.argv[2])
print(int(native._has_mixture(run * (size // len(run)))))
"""


def test_a_long_line_of_exponentials_is_read_in_linear_time():
    """A 300 KB line of `exp(` calls with no join (a pattern scanning the rest of the line from
    every `exp(` would take hours), and the same with a join at its end."""
    for run, expected in (("exp(a) ", "0"), ("exp(a) " * 50 + ") + exp(", "1")):
        done = subprocess.run([sys.executable, "-c", _MIXTURE_SCRIPT, run, "300000"],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (run, done.stderr[-2000:])
        assert done.stdout.strip() == expected


# The C reader's comment and literal blanking as it was: its answers on texts whose comments and
# literals all close are the reference (an open one now runs to the end of the text or line).
_BLANK_REFERENCE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(["a", " ", "\n", ";", "/* x */", "/* a\nb */", "// c\n", '"s"',
                                 '"a\\"b"', "'c'", "'\\''", '"/*"', "'//'", "x[i]"]), max_size=30).map("".join))
def test_the_c_readers_blanking_is_that_of_the_pattern_it_replaced(text):
    from audits.legality import native
    expected = _BLANK_REFERENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    assert native._blank_comments_and_strings(text) == expected


def _old_matching(code, at, open_, close):
    depth = 0
    for i in range(at, len(code)):
        depth += (code[i] == open_) - (code[i] == close)
        if code[i] == close and depth == 0:
            return i + 1
    return -1


def _old_block_end(body, after):
    m = re.match(r"\s*\{", body[after:])
    end = _old_matching(body, after + m.end() - 1, "{", "}") if m else body.find(";", after) + 1
    if end <= 0:
        return len(body)
    tail = re.match(r"\s*else\s+if\s*\(|\s*else\b", body[end:])
    if tail is None:
        return end
    if tail.group(0).endswith("("):
        cond_end = _old_matching(body, end + tail.end() - 1, "(", ")")
        return len(body) if cond_end < 0 else _old_block_end(body, cond_end)
    return _old_block_end(body, end + tail.end())


def _old_c_loop(native, source, code, v, body, offset):
    """The C reader's loop as it was, slicing the body at every `if`: the reference."""
    assigns = [a for a in native._assignments(body) if a[0] not in native._C_KEYWORDS]
    at_position = re.compile(rf"^(?:\([^()]*\)\s*)?\w+\s*\[\s*{re.escape(v)}\s*\]\s*$")
    tokens = {name: pos for name, rhs, pos in assigns if at_position.match(rhs.strip())}
    looked_up = {}
    for _ in range(4):
        for name, rhs, _pos in assigns:
            if name in tokens or name in looked_up:
                continue
            for token in tokens:
                if re.search(rf"\w+\s*\[\s*{re.escape(token)}\s*\]", rhs):
                    looked_up[name] = token
                    break
            else:
                hit = native._mentions(rhs, looked_up)
                if hit:
                    looked_up[name] = looked_up[hit]
    if not looked_up:
        return []
    def line(pos):
        return source.first_line + code.count("\n", 0, offset + pos)
    hits, last_call = [], {}
    for m in re.finditer(r"\bif\s*\(", body):
        cond_end = _old_matching(body, m.end() - 1, "(", ")")
        if cond_end < 0 or not native._mentions(body[m.end():cond_end], looked_up):
            continue
        block_end = _old_block_end(body, cond_end)
        writes = re.findall(rf"\b(\w+)\s*\[\s*{re.escape(v)}\s*\]\s*=(?!=)", body[cond_end:block_end])
        token = looked_up[native._mentions(body[m.end():cond_end], looked_up)]
        if token not in last_call:
            last_call[token] = _old_last_call_passing(body, token)
        if writes and block_end <= last_call[token]:
            hit = native._hit(source, "gate", line(m.start()), line(tokens[token]), "C")
            hits.append(native.dataclasses.replace(hit, outputs=tuple(dict.fromkeys(writes))))
    return hits


def _old_last_call_passing(body, token):
    word, last = re.compile(rf"\b{re.escape(token)}\b"), -1
    for part in re.finditer(r"[^;]+", body):
        start, end = part.span()
        uses = [m.start() for m in word.finditer(body, start, end)]
        for call in re.compile(r"\b\w+\s*\(").finditer(body, start, end) if uses else ():
            if call.end() > uses[-1]:
                break
            last = call.start()
    return last


_LOOP_PIECES = ["if (", "if(b)", "if (c > 0)", " else ", "else if (", "{", "}", "(", ")", ";", " ", "\n",
                "b", "c", "t", "u", "y[i] = 1;", "z[i]=", "==", "f(t);", "g(u)", "t = x[i];", "u = (int)x[i];",
                "b = w[t];", "c = b + 1;", "d = w[u], ", "for (j = 0; j < n; j++) {"]


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(_LOOP_PIECES), max_size=40).map("".join))
def test_the_c_readers_branches_are_those_of_the_reader_it_replaced(body):
    """Gates found with the body's brackets, statement ends, names and writes found once are
    those the per-branch slicing found, line numbers and outputs included."""
    from audits.legality import native
    code = "int f() {\n  for (i = 0; i < n; i++) {" + body + "}\n}\n"
    source = native.Source("k.c", code, 3, "train_gpt.py")
    loops = list(native._c_loops(code))
    assert [(v, b, at) for v, b, at in loops] == _old_loops(code)
    for v, loop_body, at in loops:
        new = [h for h in native._c_loop(source, code, v, loop_body, at, False) if h.kind == "gate"]
        assert new == _old_c_loop(native, source, code, v, loop_body, at)


def _old_loops(code):
    out = []
    for m in re.finditer(r"\bfor\s*\(", code):
        header_end = _old_matching(code, m.end() - 1, "(", ")")
        if header_end < 0:
            continue
        var = re.search(r"(\w+)\s*=(?!=)", code[m.end():header_end - 1].split(";", 1)[0])
        brace = re.match(r"\s*\{", code[header_end:])
        if var is None or brace is None:
            continue
        start = header_end + brace.end() - 1
        end = _old_matching(code, start, "{", "}")
        if end > 0:
            out.append((var.group(1), code[start:end], start))
    return out


_C_FILE_SCRIPT = """
import sys
from audits.legality import native
inner, count = sys.argv[1], int(sys.argv[2])  # K: the copy's number; (N): one more `}` at the end
body = "".join(inner.replace("(N)", "").replace("K", str(k)) for k in range(count))
code = "int f() { for (i = 0; i < n; i++) { t = x[i]; b = w[t]; " + body + "}" * inner.count("(N)") * count
code += " consume(t); } }"
print(len(code), len(native.read_native(native.Source("k.c", code, 1, "train_gpt.py"))))
"""


def test_a_large_c_file_of_nested_and_chained_branches_is_read_in_linear_time():
    """About 300 KB of C, each shaped to make a reader that slices or rescans the body at every
    `if` quadratic (minutes to hours; a reader recursing per `else if` overflows the stack):
    nested blocks, a chain of `else if`, conditions left open, a token per statement, nested
    loops, and comments and literals left open."""
    cases = [("if (b) { y[i] = 1; (N)", 15_000),  # nested blocks, each a gate
             ("if (b) y[i] = 1; else ", 15_000),  # a chain
             ("if (b ", 50_000),  # conditions that never close
             ("tK = x[i]; cK = q[tK]; if (cK) y[i] = K; f(tK); ", 6_000),  # a token per statement
             ("for (j = 0; j < n; j++) { (N)", 10_000),  # nested loops
             ("/* ", 100_000), ('\\"', 150_000)]  # comments and literals left open
    for inner, count in cases:
        done = subprocess.run([sys.executable, "-c", _C_FILE_SCRIPT, inner, str(count)],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (inner, done.stderr[-2000:])
        size, hits = map(int, done.stdout.split())
        assert size > 250_000, inner
        if inner.startswith(("if (b) {", "tK")):
            assert hits == count  # every branch is read


# A print's message as the pattern the legality analysis matched log lines with: a lazy gap per
# printed value, then trailing spaces; its answers are the reference for `printed.matches`.
def _printed_reference(pieces):
    regex = "".join(r"[^{}]*?" if piece is None else re.escape(piece) for piece in pieces)
    return re.compile(r"(?:^|(?<=[^\"'\w]))" + regex + r"\s*$")


_LINE_PIECES = ["a", "ab", "b", " ", "  ", "\t", "=", "'", '"', "{", "}", "x1", "ab=", "_", "!"]


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "ab", "b=", " a", "a ", "=", "b "])), min_size=1,
                max_size=6),
       st.lists(st.sampled_from(_LINE_PIECES), max_size=16).map("".join))
def test_printed_lines_are_those_the_pattern_matched(raw, line):
    from audits.legality import printed
    pieces: list = []  # as `printed.pattern` gives them: literals run together, one hole at most between
    for piece in raw:
        if piece is None and (not pieces or pieces[-1] is not None):
            pieces.append(None)
        elif piece is not None:
            if pieces and pieces[-1] is not None:
                pieces[-1] += piece
            else:
                pieces.append(piece)
    assume(any(piece is not None for piece in pieces))  # a message always has literal text
    assert printed.matches(tuple(pieces), line) == (_printed_reference(pieces).search(line) is not None)


_PRINTED_SCRIPT = """
import sys
from audits.legality import printed
holes, size = int(sys.argv[1]), int(sys.argv[2])
pieces = (None,) + ("word", None) * holes
line = "word" * (size // 4)
print(int(printed.matches(pieces, line + "{")), int(printed.matches(pieces + ("x",), line)))
"""


def test_a_printed_message_with_many_holes_matches_in_linear_time():
    """A message with eight printed values against a 400 KB line of its literal text ending
    where no value may (a brace): the pattern tried every placement of the eight, C(100000, 8)."""
    done = subprocess.run([sys.executable, "-c", _PRINTED_SCRIPT, "8", str(SIZE)],
                          capture_output=True, text=True, timeout=GUARD_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "0"]


# Patterns on a submission's source and strings, each as it was: their answers on normal inputs
# are the reference for the linear ones that replaced them.
_OLD_PERCENT = re.compile(r"%[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[sdifgeExXrc]")
_OLD_IMPORT = re.compile(r"(?m)^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))")
_OLD_TRAIN_DEFAULT = re.compile(r"""environ(?:\.get)?\(\s*["']([A-Z][A-Z0-9_]*)["']\s*,[^)\n]*fineweb_train_""")
_OLD_SQUASH = re.compile(r"^(.*?)\s*\(#(\d+)\)\s*$")


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(["%", "0", "00", "5", "-", " ", "+", "#", ".", "2", "d", "s", "f", "*", "x"]),
                max_size=14).map("".join))
def test_format_holes_are_those_of_the_pattern_they_replaced(text):
    from audits.legality import printed
    assert printed._PERCENT.split(text) == _OLD_PERCENT.split(text)


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(["\n", " ", "\t", "import ", "from ", "a", "a.b", " import ", "x", "#",
                                 'os.environ("DATA",', 'environ.get("TRAIN_FILES", ', "fineweb_train_", ")",
                                 "doc", "[", "]", "q_idx", "kv_idx", " == ", "cu_seqlens", "doc_mask"]),
                max_size=20).map("".join))
def test_source_patterns_are_those_they_replaced(text):
    import audits.legality as legality
    from audits.submission import runsettings
    assert legality._IMPORT.findall(text) == _OLD_IMPORT.findall(text)
    if text.count("environ") <= 1 or ")" in text:  # one call a line: the default is its own
        lines = [line for line in text.split("\n") if line.count("environ") <= 1]
        for line in lines:
            assert runsettings._TRAIN_DEFAULT.findall(line) == _OLD_TRAIN_DEFAULT.findall(line)


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(["Fix", " ", "(#12)", "(#", "12", ")", "a", "\t", "#"]), max_size=12).map("".join))
def test_squash_subjects_are_read_as_the_pattern_they_replaced_read_them(subject):
    from pgolf_cli import pulls
    new, old = pulls._SQUASH_SUBJECT.match(subject), _OLD_SQUASH.match(subject)
    assert (new and new.groups()) == (old and old.groups())


_SOURCE_SCRIPT = """
import sys
import audits.legality as legality
from audits.legality import isolation, printed
from audits.submission import runsettings
from pgolf_cli import pulls
which, size = sys.argv[1], int(sys.argv[2])
if which == "percent":
    print(len(printed._PERCENT.split("%" + "0" * size)))
elif which == "import":
    print(len(legality._IMPORT.findall("\\n" * size + " \\n" * size)))
elif which == "train_default":
    print(len(runsettings._TRAIN_DEFAULT.findall('os.environ("TRAIN",' * (size // 19))))
elif which == "isolation":
    print(int(isolation._VARLEN.search("x cu_seq" * (size // 8)) is not None))
else:
    print(int(pulls._SQUASH_SUBJECT.match("a" + " " * size + "(#1" * (size // 3) + "x") is not None))
"""


def test_source_patterns_run_in_linear_time():
    """400 KB of zeros after a `%` (a 20 KB run took 27 s: cubic), of blank lines (`^\\s*` from
    each), of `environ(` calls on one line, a line of near-misses of the varlen kernels' names,
    and a squash subject of spaces and `(#1`."""
    # None of these inputs holds a match: one piece for the split, none found by the others.
    expected = {"percent": 1, "import": 0, "train_default": 0, "isolation": 0, "squash": 0}
    for which, answer in expected.items():
        done = subprocess.run([sys.executable, "-c", _SOURCE_SCRIPT, which, str(SIZE)],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (which, done.stderr[-2000:])
        assert int(done.stdout) == answer, which
