"""Random and adversarial Python sources through the static audit (`--no-smoke`: nothing is run),
each in its own process: it always returns, with exit 0, 1 or 2 and a JSON report or one line on
stderr; never a crash, a traceback or a hang. Hypothesis draws the sources with a fixed seed, so
CI sees the same cases on every run."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

TIME_LIMIT_S = 300

# Pieces that reach the parsers' edge cases: brackets and operator chains (nesting), f-strings
# of every era, wrappers, decorators, bytes that are not text, and plain training code.
_PIECES = st.sampled_from([
    "(", ")", "[", "]", "{", "}", "+", "-", "*", "**", " if ", " else ", " for ", " in ", "lambda:",
    "x", "torch", ".", ",", ":", "\n", "\t", "    ", "#", '"', "'", 'f"{', '}"', "f'{x!r:>{w}}'",
    'f"{", ".join(a)}"', "\\", "\ufeff", "\x00", "\x1b]52;c;", "@torch.compile\n", "def f(x):\n",
    "class A:\n", "return ", "yield ", "import lzma as L,base64 as B\n",
    "exec(L.decompress(B.b85decode('Wm9v')))\n", "if __name__ == '__main__':\n    main()\n",
    "val_tokens[i + 1]", "model.train()\nopt.step()\n", "0" * 40, "é", "\u202e",
])
_CHAINS = st.builds(lambda op, n: "x = " + op.join(f"a{i}" for i in range(n)) + "\n",
                    st.sampled_from(["+", "*", " and ", " if c else "]), st.integers(100, 5000))
_NESTS = st.builds(lambda o, c, n: "x = " + o * n + "1" + c * n + "\n",
                   st.sampled_from(["(", "[", "{", "f'{"]), st.sampled_from([")", "]", "}", "}'"]),
                   st.integers(10, 3000))
SOURCES = st.one_of(st.lists(_PIECES, max_size=200).map("".join), _CHAINS, _NESTS, st.text(max_size=500))


def _audit(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pgolf_cli", "audit", "--no-smoke", "--format", "json",
                           str(folder)], capture_output=True, text=True, timeout=TIME_LIMIT_S)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=SOURCES)
@example(source="x = " + "+".join(f"a{i}" for i in range(10_000)) + "\n")  # once a hang
@example(source="x = " + "(" * 1500 + "1" + ")" * 1500 + "\n")  # once a segfault
@example(source="x = " + "[" * 3000 + "]" * 3000 + "\n")
@example(source="\ufeffimport os\nx = 1\x00\n")
def test_the_static_audit_always_returns(tmp_path, source):
    with tempfile.TemporaryDirectory(dir=tmp_path) as case:  # one folder per example
        folder = Path(case) / "2026-01-01_case"
        folder.mkdir()
        (folder / "train_gpt.py").write_bytes(source.encode("utf-8", "surrogatepass"))
        done = _audit(folder)
    assert done.returncode in (0, 1, 2), (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    if done.stdout.strip():
        report = json.loads(done.stdout)
        (sub,) = report["submissions"]
        assert sub["errors"] == [], sub["errors"]  # no check of pgolf's own broke on it
        assert sub["verdict"] in ("PASS", "ILLEGAL", "NEEDS_ACTION")
    else:  # refused as input: one line saying why
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
