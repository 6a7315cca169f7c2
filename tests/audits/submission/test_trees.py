"""The parsed trees every reader shares, and hostile sources and folders the loader and the
parsers must come through with findings, not crashes or hangs."""

from __future__ import annotations

import os

import pytest

from audits.api import audit
from audits.context import AuditOptions
from audits.submission import trees


def test_each_source_is_parsed_once_and_a_failure_is_the_same_for_every_reader():
    source = "import torch\nx = torch.zeros(3)\n"
    assert trees.cst_module(source) is trees.cst_module(source)
    assert trees.ast_module(source) is trees.ast_module(source)
    module = trees.cst_module(source)
    assert trees.positions(module) is trees.positions(module)
    for _ in range(2):
        with pytest.raises(SyntaxError):
            trees.ast_module("def f(:\n")


def test_positions_give_line_ranges_and_source_offsets():
    source = "a = 1\nb = [a,\n     2]\n"
    module = trees.cst_module(source)
    value = module.body[1].body[0].value  # the list
    found = trees.positions(module)
    assert found.ranges[value] == ((2, 4), (3, 7))
    start, end = found.spans[id(value)]
    assert source[start:end] == "[a,\n     2]"


@pytest.mark.parametrize("source, why", [
    ("x = " + "+".join(f"a{i}" for i in range(3000)) + "\n", "levels deep"),
    ("x = " + "+".join(f"a{i}" for i in range(3000)) + "\nf'{x:{'a'}}'\n", "levels deep"),  # not ast
    ("x = [" + "1," * 600_000 + "]\n", "characters is over"),
])
def test_a_source_too_deep_or_too_large_for_libcst_is_not_given_to_it(source, why):
    with pytest.raises(trees.TooComplex, match=why):
        trees.cst_module(source)


def test_minified_code_libcst_calls_invalid_is_parsed_losslessly():
    source = "n=sum((a)-(0 if w==0 else c)for w in r)\n"  # Python takes it; libcst's node check does not
    assert trees.cst_module(source).code == source


def _audit(tmp_path, files: dict[str, str]):
    folder = tmp_path / "2026-05-01_case"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder, audit([str(folder)], AuditOptions()).submissions[0]


def test_a_long_operator_chain_is_reported_unchecked_without_an_internal_error(tmp_path):
    _, report = _audit(tmp_path, {"train_gpt.py": "x = " + "+".join(f"a{i}" for i in range(10_000)) + "\n"})
    assert report.errors == []
    unchecked = [f for f in report.findings if f.unchecked and "too complex to analyse" in f.message]
    assert unchecked and all(f.file == "train_gpt.py" for f in unchecked)


def test_a_byte_order_mark_is_read_as_python_reads_it(tmp_path):
    _, report = _audit(tmp_path, {"train_gpt.py": "\ufeffimport os\nprint(os.name)\n"})
    assert report.errors == []
    assert not [f for f in report.findings if f.rule.startswith("PY_")]


def test_a_symbolic_link_loop_is_a_finding(tmp_path):
    folder = tmp_path / "2026-05-01_case"
    folder.mkdir()
    (folder / "train_gpt.py").write_text("x = 1\n")
    os.symlink("b", folder / "a")
    os.symlink("a", folder / "b")
    report = audit([str(folder)], AuditOptions()).submissions[0]
    assert report.errors == []
    loops = [f for f in report.findings if f.rule == "SYMLINK_OUTSIDE"]
    assert sorted(f.file for f in loops) == ["a", "b"] and all("loops" in f.message for f in loops)


def test_a_fifo_and_a_tree_600_deep_in_the_folder_are_findings_not_hangs(tmp_path):
    folder = tmp_path / "2026-05-01_case"
    folder.mkdir()
    (folder / "train_gpt.py").write_text("x = 1\n")
    os.mkfifo(folder / "train_seed42.log")  # opening it to read would block forever
    deep = folder.joinpath(*["d"] * 600)
    deep.mkdir(parents=True)
    try:
        report = audit([str(folder)], AuditOptions()).submissions[0]
    finally:
        for level in range(600, 0, -1):  # no recursive removal: pytest's own would overflow
            folder.joinpath(*["d"] * level).rmdir()
    assert report.errors == []
    assert [f for f in report.findings if f.rule == "FILE_UNREADABLE" and "nested deeper" in f.message]
