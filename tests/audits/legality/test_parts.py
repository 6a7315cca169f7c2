"""Pieces of the legality analysis that are easy to get subtly wrong: line numbers, the shapes
that name the targets, data labels from paths, statement order, one parse per submission."""

from __future__ import annotations

import types

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from audits import legality
from audits.legality import imports, shapes
from audits.legality.operators import string_taint
from audits.legality.order import relation
from audits.legality.parse import parse
from audits.legality.values import TRAIN, VAL, Site
from audits.registry import CHECKS, doc
from tests.legality_fixtures import RULES

SAMPLE = '''# header comment

import torch


@torch.no_grad()
def score(model, ids):
    """Docstring."""
    total = 0.0
    for i in range(3):
        total += model(ids[i])  # inline
    return total


class Model:
    # a comment in the class body

    def forward(self, x):
        return x[:, 1:] + x[:, :-1]

    @staticmethod
    def helper(y):
        def inner(z):
            return z * 2
        return inner(y)
'''


def test_positions_match_libcst_on_the_whole_module():
    """Line numbers recorded in one codegen pass are exactly PositionProvider's, for every node
    (blank lines and line ends aside: they belong to no expression or statement)."""
    parsed = parse("train_gpt.py", SAMPLE)
    full = MetadataWrapper(parsed.module, unsafe_skip_copy=True).resolve(PositionProvider)
    checked = 0
    for stmt in parsed.module.body:
        for node in _nodes(stmt):
            if node in full and not isinstance(node, (cst.EmptyLine, cst.Newline, cst.TrailingWhitespace)):
                assert parsed.position(node) == full[node], type(node).__name__
                checked += 1
    assert checked > 100


def _nodes(root):
    class Every(cst.CSTVisitor):
        def __init__(self):
            self.nodes = []

        def on_visit(self, node):
            self.nodes.append(node)
            return True

    every = Every()
    root.visit(every)
    return every.nodes


def test_excerpt_dedents_and_cuts():
    parsed = parse("train_gpt.py", SAMPLE)
    assert parsed.excerpt(10, 11) == "for i in range(3):\n    total += model(ids[i])  # inline"
    assert parsed.excerpt(7, 12, limit=2).endswith("\n...")


@pytest.mark.parametrize("text, taint", [
    ("./data/datasets/fineweb10B_sp1024/fineweb_val_*.bin", {VAL}),
    ("fineweb_train_000001.bin", {TRAIN}),
    ("/data/val.bin", {VAL}),
    ("validation", {VAL}),
    ("val_loss:{x:.4f}", set()),  # a log format, not a path
    ("train_gpt.py", set()),
    ("logs/run.txt", set()),
    ("Folder of fineweb_train_*.bin and fineweb_val_*.bin shards.", set()),  # prose, not a path
])
def test_paths_name_their_split(text, taint):
    assert string_taint(text) == frozenset(taint)


def test_piece_table_reads_a_module_level_marker():
    module = cst.parse_module(
        'SPACE = "\\u2581"\n'
        "for i in range(sp.vocab_size()):\n"
        "    piece = sp.id_to_piece(i)\n"
        "    if sp.is_byte(i):\n"
        "        base[i] = 1\n"
        "    elif piece.startswith(SPACE):\n"
        "        base[i] = len(piece[1:].encode())\n")
    constants = {"SPACE": module.body[0].body[0].value}
    found = shapes.piece_table_loop(module.body[1], lambda n: constants.get(getattr(n, "value", None), n))
    assert found == {"byte_fallback": True, "leading_space": True, "space_twice": False}
    assert shapes.piece_table_loop(module.body[1], lambda n: n) == {"byte_fallback": True, "leading_space": False,
                                                                    "space_twice": False}


def _shape(code):
    sub = cst.parse_expression(code)
    return shapes.index_shape(sub, lambda node: cst.Module([]).code_for_node(node))


@pytest.mark.parametrize("later, earlier, expected", [
    ("t[1:]", "t[:-1]", True),
    ("t[s + 1:s + n + 1]", "t[s:s + n]", True),
    ("t[:, 1:]", "t[:, :-1]", True),
    ("t[p]", "t[p - 3:p]", True),
    ("t[:-1]", "t[1:]", False),
    ("t[2:]", "t[:-1]", False),
    ("t[1:]", "t[1:]", False),
    ("t[i + 1]", "t[i]", False),  # two single positions say nothing about context and target
])
def test_targets_are_the_positions_one_later(later, earlier, expected):
    assert shapes.one_later(_shape(later), _shape(earlier)) is expected


def test_imports_resolve_aliases():
    module = cst.parse_module("import torch.nn.functional as F\nfrom torch import nn, optim as O\nimport numpy\n")
    table = {}
    for stmt in module.body:
        imports.add(stmt.body[0], table)
    assert imports.qualified(cst.parse_expression("F.cross_entropy"), table) == "torch.nn.functional.cross_entropy"
    assert imports.qualified(cst.parse_expression("nn.Parameter"), table) == "torch.nn.Parameter"
    assert imports.qualified(cst.parse_expression("O.AdamW"), table) == "torch.optim.AdamW"
    assert imports.qualified(cst.parse_expression("numpy.log"), table) == "numpy.log"
    assert imports.qualified(cst.parse_expression("model.step"), table) is None


def _site(path):
    fn = types.SimpleNamespace(key="f", top=0)
    return Site(fn, cst.Name("x"), path, ())


def test_statement_order():
    assert relation(_site(((0, 1),)), _site(((0, 2),))) == "before"
    assert relation(_site(((0, 3), (0, 0))), _site(((0, 2),))) == "after"
    assert relation(_site(((0, 2), (-1, 0))), _site(((0, 2), (-2, 0)))) == "exclusive"  # if / else
    assert relation(_site(((0, 2), (0, 5))), _site(((0, 2), (1, 0)))) == "before"  # loop body, else
    assert relation(_site(((0, 2),)), _site(((0, 2),))) == "same"


def test_one_parse_per_submission(tmp_path):
    from audits.submission import load
    (tmp_path / "train_gpt.py").write_text(SAMPLE)
    sub = load(tmp_path)
    assert legality.analyse(sub) is legality.analyse(sub)


@pytest.mark.parametrize("rule", RULES)
def test_rule_docs_have_the_headings(rule):
    assert rule in CHECKS
    text = doc(rule)
    for heading in ("What it checks:", "Why it matters:", "Illegal:", "Legal:", "Known limits:"):
        assert heading in text, f"{rule}: no '{heading}'"


def test_number_literals_in_any_base_are_read():
    """Hex, octal, binary and underscored literals where the analysis reads numbers (a setting's
    default, smoothing constants, a tilt's constant) are values, not a crash of every rule."""
    source = '''import os
import torch

MASK = int(os.environ.get("MASK", 0xE000))
BITS = os.environ.get("BITS", 0b1010)


def score(counts, total, p, ids):
    smoothed = (counts + 0x1) / (total + 0o2)
    tilted = torch.log1p(p * (torch.exp(torch.tensor(1.5)) - 0x1))
    return smoothed, tilted, [chr(0xE000 + i) for i in ids], 1_000 + 0xD15EA5E
'''
    result = legality.analyse_sources((("train_gpt.py", source),))
    assert "train_gpt.py" in result.scripts and not result.unparsed


def test_a_string_of_thousands_of_adjacent_literals_is_read():
    """A payload written as many adjacent literals ("a" "b" ... over many lines) is one chain."""
    parts = "\n".join(f'    "{i:04d}"' for i in range(3000))
    source = f"import lzma\nBLOB = (\n{parts}\n)\nprint(len(BLOB))\n"
    result = legality.analyse_sources((("train_gpt.py", source),))
    assert "train_gpt.py" in result.scripts and not result.unparsed
