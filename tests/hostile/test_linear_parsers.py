"""Lines built to make a backtracking pattern quadratic, through the log parser in a separate
process. Each line is 400 KB: a quadratic pattern took minutes to hours on one (a 40 KB step line
took 21 s), a linear one takes milliseconds. The process's time limit only guards against a hang;
it measures nothing."""

from __future__ import annotations

import subprocess
import sys

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
