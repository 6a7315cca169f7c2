"""The lines a print call writes, as a pattern of its literal text (audits/legality/printed.py)."""

from __future__ import annotations

import libcst as cst
import pytest

from audits.legality.printed import matches, pattern


def _pattern(code: str):
    module = cst.parse_module(code)
    call = module.body[0].body[0].value
    return pattern(call, lambda node: module.code_for_node(node))


@pytest.mark.parametrize("code, line", [
    ('print(f"ngram_eval:order={o} alpha={a}")', "ngram_eval:order=7 alpha=0.3"),
    ('log0("ttt_sliding: chunks=%d lr=%.4f" % (n, lr))', "ttt_sliding: chunks=947 lr=0.0020"),
    ('logger.info("Starting N-gram eval: order {}-{}".format(lo, hi))', "Starting N-gram eval: order 2-9"),
    ('print("slot enabled: " f"steps={s}\\nmore text")', "slot enabled: steps=8"),
    ('self.log(f"  ngram_chunk [{i}/{n}] bpb={b:.6f}")', "  ngram_chunk [0/947] bpb=1.176130"),
])
def test_a_message_matches_the_line_it_prints(code, line):
    pieces, anchor = _pattern(code)
    assert anchor in line
    assert matches(pieces, line)


@pytest.mark.parametrize("code", [
    'print(f"{k}: {v}")',                   # too little literal text to tell one line from another
    'torch.log(x)',                          # no message
    'writer.write("ngram_eval:order=7 alpha=0.3")',  # not a printer
    'print(msg)',                            # the text is not known here
])
def test_no_pattern_where_the_line_cannot_be_told(code):
    assert _pattern(code) is None


def test_a_formatted_value_never_matches_source_code():
    pieces, _ = _pattern('print(f"ngram_eval:order={o} alpha={a}")')
    assert not matches(pieces, 'print(f"ngram_eval:order={o} alpha={a}")')
