"""scripts/new_rule.py: a new legality rule is its module, its fixtures and its line in
docs/legality.md, nothing else; the catalogue's tests and the review snapshot take it without an
edit, and fail once one of those pieces is missing. Run on a copy of the parts of the project the
rule touches."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
COPIED = ("audits", "scripts/new_rule.py", "docs/legality.md", "pyproject.toml", "tests/__init__.py",
          "tests/legality_fixtures.py", "tests/audits/test_catalogue.py",
          "tests/audits/legality/test_rule_homes.py", "tests/audits/legality/test_markdown.py",
          "tests/audits/legality/snapshots", "tests/fixtures/legality")
NEW = ("audits/rules/legality/answer_peek.py", "docs/legality.md",
       "tests/fixtures/legality/answer_peek/answer_peek_legal.py",
       "tests/fixtures/legality/answer_peek/answer_peek_violation.py")


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    for rel in COPIED:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_dir():
            shutil.copytree(ROOT / rel, copy / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / rel, copy / rel)
    return copy


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=copy, env=env,
                          timeout=600)


def _tests(copy: Path, *paths: str) -> subprocess.CompletedProcess:
    return _run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths)


def test_a_new_legality_rule_touches_its_module_its_fixtures_and_the_docs_page_only(tmp_path):
    copy = _copy(tmp_path)
    before = _files(copy)
    done = _run(copy, "scripts/new_rule.py", "ANSWER_PEEK", "--family", "legality", "--severity", "FAIL",
                "--level", "ILLEGAL", "--summary", "No score reads the answer before predicting it.",
                "--condition", "C1")
    assert done.returncode == 0, done.stderr
    after = _files(copy)
    changed = sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))
    assert changed == sorted(NEW)
    assert "| `ANSWER_PEEK` | FAIL | C1 |" in after["docs/legality.md"].decode()

    listed = _run(copy, "-c", "from audits import catalogue\n"
                  "print(*(r.id for r in catalogue.RULES if r.family == 'legality'))")
    assert listed.stdout.split()[-1] == "ANSWER_PEEK", listed.stderr

    passed = _tests(copy, "tests/audits/test_catalogue.py", "tests/audits/legality/test_rule_homes.py",
                    "tests/audits/legality/test_markdown.py")
    assert passed.returncode == 0, passed.stdout[-3000:]

    # without its line in the docs table, or without a legal fixture, the catalogue's tests fail
    docs = copy / "docs" / "legality.md"
    docs.write_text("".join(line for line in docs.read_text().splitlines(keepends=True)
                            if "`ANSWER_PEEK`" not in line))
    (copy / NEW[2]).unlink()
    failed = _tests(copy, "tests/audits/test_catalogue.py")
    assert failed.returncode == 1
    assert "test_the_docs_table_lists_the_legality_rules_in_the_catalogue_order" in failed.stdout
    assert "ANSWER_PEEK: no legal fixture" in failed.stdout


def test_conditions_are_refused_outside_the_legality_family(tmp_path):
    copy = _copy(tmp_path)
    before = _files(copy)
    done = _run(copy, "scripts/new_rule.py", "LOG_TRUNCATED", "--family", "metadata", "--severity", "WARN",
                "--level", "NEEDS_ACTION", "--summary", "Every log ends.", "--condition", "C1")
    assert done.returncode == 1 and done.stderr.startswith("error: --condition is for legality rules")
    assert _files(copy) == before
