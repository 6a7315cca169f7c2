"""pgolf's Python 3.10 verdict against a real CPython 3.10's, snippet by snippet.

The oracle's verdicts (compiles, or SyntaxError with message and line) are stored in
oracle310.json; the last test recomputes them with pyodide when Node is available.
"""

from __future__ import annotations

import libcst
import pytest

from audits import pyversion
from pyversion_corpus import snippets
import pyversion_oracle


def _verdict(source: str) -> dict:
    first = pyversion.analyse(source, (3, 10)).first_error
    if first is None:
        return {"ok": True}
    return {"ok": False, "msg": first.message, "line": first.line}


def _readable(source: str) -> bool:
    """Whether libcst reads the snippet (valid in some Python): then the message must match too."""
    try:
        libcst.parse_module(source)
    except Exception:
        return False
    return True


@pytest.fixture(scope="module")
def fixture():
    return pyversion_oracle.load()


def test_fixture_holds_the_current_corpus(fixture):
    assert [case["source"] for case in fixture["cases"]] == snippets(), \
        "the corpus changed: rerun `python tests/audits/pyversion/pyversion_oracle.py`"
    assert fixture["python"].startswith("3.10.")
    assert len(fixture["cases"]) >= 1000


@pytest.mark.slow
def test_verdicts_agree_with_cpython_310(fixture):
    wrong_line, wrong_message = [], []
    for case in fixture["cases"]:
        source, oracle = case["source"], case["verdict"]
        mine = _verdict(source)
        if oracle["ok"] != mine["ok"] or not oracle["ok"] and oracle["line"] != mine["line"]:
            wrong_line.append((source, oracle, mine))
        elif not oracle["ok"] and oracle["msg"] != mine["msg"] and _readable(source):
            wrong_message.append((source, oracle, mine))
    report = "\n".join(f"{s!r}\n  CPython 3.10: {o}\n  pgolf:        {m}" for s, o, m in wrong_line + wrong_message)
    assert not wrong_line and not wrong_message, report


def test_corpus_covers_both_verdicts(fixture):
    verdicts = [case["verdict"] for case in fixture["cases"]]
    accepted = sum(v["ok"] for v in verdicts)
    assert accepted >= 300 and len(verdicts) - accepted >= 300


def test_oracle_recomputed_matches_the_fixtures(fixture):
    reason = pyversion_oracle.available()
    if reason:
        pytest.skip(reason)
    result = pyversion_oracle.run([case["source"] for case in fixture["cases"]])
    assert result["version"] == fixture["python"]
    assert result["verdicts"] == [case["verdict"] for case in fixture["cases"]]
    names = pyversion_oracle.load_names()["present"]
    found = pyversion_oracle.run(sorted(names), "names")
    assert dict(zip(sorted(names), found["verdicts"])) == names
