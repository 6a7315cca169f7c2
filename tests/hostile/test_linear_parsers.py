"""Inputs built to make a backtracking pattern quadratic, through the log parser and the C reader,
each in a separate process. A log line is 400 KB, a loop body 300 KB: a quadratic pattern took
minutes to hours on them (a 40 KB step line took 21 s), a linear reader takes a fraction of a
second. The process's time limit only guards against a hang; it measures nothing."""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import given, settings
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
    """A 300 KB loop body of assignments with no `;` (once 406 s): each value was found by a
    pattern scanning ahead from every `=`."""
    for run in ("x = 1 ", "x =      ", "a = b, "):
        done = subprocess.run([sys.executable, "-c", _C_SCRIPT, run, "300000"],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (run, done.stderr[-2000:])
        assert int(done.stdout) >= 0


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
    last = native._last_call_passing(body, "n")
    for cut in [0] + [k + 1 for k, ch in enumerate(body) if ch in ";}"]:  # a statement's or block's end
        expected = re.search(r"\b\w+\s*\([^;]*\bn\b", body[cut:]) is not None
        assert (cut <= last) == expected


_C_LOOP_SCRIPT = """
import sys
from audits.legality import native
run, size = sys.argv[1], int(sys.argv[2])
code = "for (i = 0; i < n; i++) { t = x[i]; b = w[t]; if (b > 0) { y[i] = 1; } " + run * (size // len(run)) + " }"
source = native.Source("k.c", code, 1, "train_gpt.py")
print(len(native._c_loop(source, code, "i", code[code.index("{"):], code.index("{"), True)))
"""


def test_a_long_c_statement_is_read_in_linear_time():
    """A 300 KB statement in a loop that reads a token (minutes before): the division pattern
    scanned the rest of the statement from every place, the call pattern from every `f(`."""
    for run in ("a ", "x[i] ", "f(", "a/"):
        done = subprocess.run([sys.executable, "-c", _C_LOOP_SCRIPT, run, "300000"],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (run, done.stderr[-2000:])
        assert int(done.stdout) >= 0


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
    """A 300 KB line of `exp(` calls with no join (hours before: the pattern scanned the rest of
    the line from every `exp(`), and the same with a join at its end."""
    for run, expected in (("exp(a) ", "0"), ("exp(a) " * 50 + ") + exp(", "1")):
        done = subprocess.run([sys.executable, "-c", _MIXTURE_SCRIPT, run, "300000"],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == 0, (run, done.stderr[-2000:])
        assert done.stdout.strip() == expected
