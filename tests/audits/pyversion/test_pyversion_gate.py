"""The version gate on its own: features per target, messages and places, the standard-library
table, and hostile input."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import pyversion_oracle
from oracle310_judges import judge_name
from audits import pyversion
from audits.pyversion.stdlib_api import ADDED

ROOT = Path(__file__).resolve().parents[3]


def _problems(source: str, target=(3, 10), rule=None):
    return [p for p in pyversion.analyse(source, target).problems if rule is None or p.rule == rule]


def test_seed_case_names_line_column_and_the_310_message():
    source = "import os\n\nx = ['a']\nlog(f\"{\", \".join(x)}\")\n"
    [problem] = _problems(source)
    assert (problem.rule, problem.line, problem.column) == (pyversion.SYNTAX, 4, 8)
    assert "PEP 701" in problem.message and "f-string: expecting '}'" in problem.message
    assert problem.first
    assert _problems(source, (3, 12)) == []


# One snippet per feature: the first Python that accepts it, and the line 3.10 reports.
FEATURES = [
    ("try:\n    pass\nexcept* E:\n    pass\n", (3, 11), 3, "invalid syntax"),
    ("y = x[*a]\n", (3, 11), 1, "invalid syntax"),
    ("f(\n  x[*a])\n", (3, 11), 2, "invalid syntax. Perhaps you forgot a comma?"),
    ("class G(Generic[*Ts]):\n    pass\n", (3, 11), 1, "expected ':'"),
    ("def f(*args: *Ts):\n    pass\n", (3, 11), 1, "invalid syntax"),
    ("def f[T](x: T):\n    pass\n", (3, 12), 1, "invalid syntax"),
    ("class C[T]:\n    pass\n", (3, 12), 1, "expected ':'"),
    ("type Alias = int\n", (3, 12), 1, "invalid syntax"),
    ("x = 1\ny = t'{x}'\n", (3, 14), 2, "invalid syntax"),
    ("try:\n    pass\nexcept A, B:\n    pass\n", (3, 14), 3, "multiple exception types must be parenthesized"),
    ("async def f():\n    return [[x async for x in y] for z in w]\n", (3, 11), 2,
     "asynchronous comprehension outside of an asynchronous function"),
    ('s = f"""{\n    x  # why\n}"""\n', (3, 12), 3, "f-string expression part cannot include '#'"),
    ("s = f'{chr(10)}' + f'{\"\\n\".join(x)}'\n", (3, 12), 1,
     "f-string expression part cannot include a backslash"),
]


@pytest.mark.parametrize("source,needs,line,message", FEATURES)
def test_each_feature_is_reported_until_its_python(source, needs, line, message):
    older = (needs[0], needs[1] - 1)
    problems = _problems(source, older, pyversion.SYNTAX)
    assert problems, f"nothing reported for target {older}"
    if older == (3, 10):
        first = pyversion.analyse(source, older).first_error
        assert (first.line, first.message) == (line, message)
        assert message in problems[0].message and problems[0].line == line
    assert _problems(source, needs, pyversion.SYNTAX) == []


def test_type_parameter_defaults_need_313():
    source = "class C[T = int]:\n    pass\n"
    assert [p.needs for p in _problems(source, (3, 12))] == [(3, 13)]
    assert _problems(source, (3, 13)) == []


def test_older_targets_see_match_and_parenthesized_with():
    source = "match x:\n    case 1:\n        pass\nwith (open(a) as f, open(b) as g):\n    pass\n"
    assert {p.needs for p in _problems(source, (3, 9))} == {(3, 10)}
    assert _problems(source, (3, 10)) == []


def test_finally_exits_warn_from_314_only():
    source = "def f():\n    try:\n        pass\n    finally:\n        return 1\n"
    assert _problems(source, (3, 13)) == []
    [warning] = _problems(source, (3, 14))
    assert warning.severity == "WARN" and warning.line == 5 and "PEP 765" in warning.message
    loop = "for x in y:\n    try:\n        pass\n    finally:\n        for z in w:\n            break\n"
    assert _problems(loop, (3, 14)) == []


def test_all_features_of_a_file_are_listed_and_the_first_is_marked():
    source = "import os\ntype A = int\nx = 1\nlog(f\"{d[\"k\"]}\")\nclass C[T]:\n    pass\n"
    problems = _problems(source)
    assert [p.line for p in problems] == [2, 4, 5]
    assert [p.first for p in problems] == [True, False, False]


STDLIB = [
    ("import tomllib\n", "tomllib", 1),
    ("from typing import Self\n", "typing.Self", 1),
    ("import itertools as it\nfor b in it.batched(x, 2):\n    pass\n", "itertools.batched", 2),
    ("import datetime\nnow = datetime.datetime.now(datetime.UTC)\n", "datetime.UTC", 2),
    ("from enum import StrEnum as S\n", "enum.StrEnum", 1),
    ("import math\ny = math.cbrt(8)\n", "math.cbrt", 2),
    ("from os import path\np = path.splitroot(x)\n", "os.path.splitroot", 2),
    ("try:\n    pass\nexcept* ValueError:\n    pass\nraise ExceptionGroup('x', [])\n", "ExceptionGroup", 5),
    ("import hashlib\nhashlib.file_digest(f, 'sha256')\n", "hashlib.file_digest", 2),
]


@pytest.mark.parametrize("source,name,line", STDLIB)
def test_stdlib_names_resolve_through_imports_and_aliases(source, name, line):
    [use] = _problems(source, (3, 10), pyversion.STDLIB)
    assert f"`{name}`" in use.message and use.line == line
    assert _problems(source, ADDED[name], pyversion.STDLIB) == []


@pytest.mark.parametrize("source", [
    "import sys\nif sys.version_info >= (3, 11):\n    import tomllib\nelse:\n    import tomli as tomllib\n",
    "import sys\nif sys.version_info < (3, 11):\n    import tomli as tomllib\nelse:\n    import tomllib\n",
    "try:\n    import tomllib\nexcept ImportError:\n    tomllib = None\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from typing import Self\n",
    "import math\nif hasattr(math, 'cbrt'):\n    y = math.cbrt(8)\n",
    "from __future__ import annotations\nimport typing\ndef f(self) -> typing.Self:\n    pass\n",
    "class ExceptionGroup(Exception):\n    pass\nraise ExceptionGroup()\n",
    "from datetime import datetime\nnow = datetime.UTC\n",
])
def test_guarded_or_shadowed_uses_are_not_reported(source):
    assert _problems(source, (3, 10), pyversion.STDLIB) == []


def test_stdlib_table_against_cpython_310():
    table = pyversion_oracle.load_names()
    assert table["python"].startswith("3.10.")
    assert sorted(table["present"]) == sorted(ADDED), "the table changed: rerun pyversion_oracle.py"
    wrong = [name for name, needs in ADDED.items() if table["present"][name] != (needs <= (3, 10))]
    assert wrong == []


def test_stdlib_table_against_this_python():
    host = sys.version_info[:2]
    missing = [name for name, needs in ADDED.items() if needs <= host and not judge_name(name)]
    assert missing == []
    unexpected = [name for name, needs in ADDED.items() if needs > host and judge_name(name)]
    assert unexpected == []


# --- source no Python accepts, and hostile input ---------------------------------------------

def test_source_invalid_everywhere_is_a_syntax_error_with_its_line():
    analysis = pyversion.analyse("import os\n\ndef f(:\n    pass\n")
    [problem] = analysis.problems
    assert problem.rule == pyversion.ERROR and problem.line == 3
    assert analysis.first_error.line == 3


def test_nul_byte_is_reported_not_raised():
    [problem] = pyversion.analyse("x = 1\ny = '\0'\n").problems
    assert problem.rule == pyversion.ERROR and problem.line == 2


def test_a_source_over_the_limit_is_not_analysed():
    big = "x = 1\n" * (pyversion.MAX_SOURCE // 6 + 1)
    [note] = pyversion.analyse(big).problems
    assert note.severity == "WARN" and "not checked" in note.message


@pytest.mark.parametrize("shape", [
    lambda n: "x = " + "(" * n + "1" + ")" * n,
    lambda n: "x = " + "-" * n + "1",
    lambda n: "x = " + "not " * n + "y",
    lambda n: "x = a" + " + a" * n,
    lambda n: "x = y" + "[0]" * n,
    lambda n: "x = y" + ".a" * n,
    lambda n: "x = " + "lambda: " * n + "1",
    lambda n: "x = " + "1 if c else " * n + "2",
    lambda n: "x = " + "[" * n + "]" * n,
])
def test_ten_thousand_deep_expressions_neither_crash_nor_hang(shape):
    started = time.perf_counter()
    analysis = pyversion.analyse(shape(10_000) + "\n")
    assert analysis.problems, "a 10,000-deep expression must be reported"
    assert time.perf_counter() - started < 60, "a hang, not a slow machine"


def test_too_many_parentheses_is_310s_own_error():
    analysis = pyversion.analyse("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    assert analysis.first_error.message == "too many nested parentheses"


@pytest.mark.slow
def test_pgolfs_own_sources_pass_the_310_gate():
    files = sorted(p for part in ("audits", "pgolf_cli", "trainer", "tests") for p in (ROOT / part).rglob("*.py")
                   if "fixtures" not in p.parts)  # fixtures are audited code, some broken on purpose
    assert files
    failing = {str(f.relative_to(ROOT)): pyversion.analyse(f.read_text(encoding="utf-8")).problems
               for f in files}
    assert {k: v for k, v in failing.items() if v} == {}
