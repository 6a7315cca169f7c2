"""BPB_BYTE_ACCOUNTING on a run that reads its bytes-per-token table from an array file shipped in
the folder: the table is read (never run) and checked against the shipped tokenizer (a
SentencePiece model, or a TokenMonster vocabulary)."""

import io

import numpy as np
import sentencepiece as spm

from support import audit_findings, by_rule, good_folder_files, write_folder
from trainer_support import SAMPLE_TOKENIZER

RULE = "BPB_BYTE_ACCOUNTING"

# Scores with the table of tokenizer.meta.npz when it exists, else builds one from the pieces.
SCRIPT = '''import math
import os

import numpy as np
import sentencepiece as spm
import torch


def piece_tables(sp):
    base = np.zeros(sp.vocab_size(), dtype=np.int16)
    space = np.zeros(sp.vocab_size(), dtype=bool)
    for i in range(sp.vocab_size()):
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            continue
        if sp.is_byte(i):
            base[i] = 1
            continue
        piece = sp.id_to_piece(i)
        if piece.startswith("\\u2581"):
            space[i] = True
            piece = piece[1:]
        base[i] = len(piece.encode("utf-8"))
    return base, space


def load_tables(path):
    if os.path.exists("tokenizer.meta.npz"):
        with np.load("tokenizer.meta.npz", allow_pickle=False) as data:
            return data["base_bytes"], data["has_leading_space"]
    return piece_tables(spm.SentencePieceProcessor(model_file=path))


def bits_per_byte(nll_sum, targets, base, space):
    return nll_sum / math.log(2) / (base[targets] + space[targets]).sum()


if __name__ == "__main__":
    base, space = load_tables("tokenizer.model")
    print(bits_per_byte(torch.tensor(10.0), torch.arange(4, 9), torch.from_numpy(base),
                        torch.from_numpy(space)))
'''
LOAD_LINE = 28  # the np.load
READ_LINE = 29  # where the table's array is taken out of it by name: the line a finding names


def _sp():
    return spm.SentencePieceProcessor(model_file=str(SAMPLE_TOKENIZER))


def _true_tables(sp):
    """The baseline's count: what the rule must accept."""
    n = sp.vocab_size()
    base, space = np.zeros(n, dtype=np.int16), np.zeros(n, dtype=bool)
    for i in range(n):
        if sp.is_byte(i):
            base[i] = 1
        elif not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i)):
            piece = sp.id_to_piece(i)
            space[i] = piece.startswith("\u2581")
            base[i] = len(piece.lstrip("\u2581").encode("utf-8"))
    return base, space


def _npz(**arrays) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _audit(tmp_path, files, script=SCRIPT):
    folder_files = good_folder_files()
    folder_files["train_gpt.py"] = script
    folder_files.update(files)
    return by_rule(audit_findings(write_folder(tmp_path / "2026-04-20_MetaTable", folder_files),
                                  only=frozenset({RULE})), RULE)


def test_a_shipped_table_counting_byte_fallback_pieces_as_three_bytes_fails(tmp_path):
    sp = _sp()
    base, space = _true_tables(sp)
    fallback = [i for i in range(sp.vocab_size()) if sp.is_byte(i)]
    base[fallback[0]:fallback[-1] + 1] = 3
    found = _audit(tmp_path, {"tokenizer.model": SAMPLE_TOKENIZER.read_bytes(),
                              "tokenizer.meta.npz": _npz(base_bytes=base, has_leading_space=space)})
    [finding] = [f for f in found if str(f.severity) == "FAIL"]
    assert finding.file == "train_gpt.py" and finding.line == READ_LINE
    assert finding.evidence == f'{READ_LINE}: return data["base_bytes"], data["has_leading_space"]'
    assert (f"tokenizer.meta.npz[base_bytes] at line {READ_LINE}" in finding.message
            and f"base_bytes[{fallback[0]}..{fallback[-1]}]=3 for byte-fallback pieces of 1 byte"
            in finding.message and "tokenizer.model" in finding.message)
    # the piece loop is not the table the run scores with: it certifies nothing
    assert not any("counted from the tokenizer's pieces" in f.message for f in found)


def test_a_table_that_also_counts_the_space_of_flagged_pieces_fails(tmp_path):
    sp = _sp()
    base, space = _true_tables(sp)
    spaced = int(np.nonzero(space)[0][0])
    base[spaced] += 1  # the space counted twice: in the piece and by its flag
    found = _audit(tmp_path, {"tokenizer.model": SAMPLE_TOKENIZER.read_bytes(),
                              "tokenizer.meta.npz": _npz(base_bytes=base, has_leading_space=space)})
    [finding] = by_rule(found, RULE, "FAIL")
    assert f"base_bytes[{spaced}]={base[spaced]} for text piece of {base[spaced] - 1} bytes" in finding.message


def test_a_shipped_table_that_matches_the_tokenizer_is_noted(tmp_path):
    base, space = _true_tables(_sp())
    found = _audit(tmp_path, {"tokenizer.model": SAMPLE_TOKENIZER.read_bytes(),
                              "tokenizer.meta.npz": _npz(base_bytes=base, has_leading_space=space)})
    assert [str(f.severity) for f in found] == ["INFO"]
    assert found[0].line == READ_LINE and "counts no more bytes than the tokens" in found[0].message


def test_a_table_without_a_tokenizer_to_check_it_against_is_a_warning(tmp_path):
    base, space = _true_tables(_sp())
    base[:] = 3
    [finding] = _audit(tmp_path, {"tokenizer.meta.npz": _npz(base_bytes=base, has_leading_space=space)})
    assert str(finding.severity) == "WARN" and finding.line == READ_LINE
    assert "was not checked against the tokenizer: no tokenizer" in finding.message


def test_hostile_table_files_are_findings_not_crashes(tmp_path):
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"x": 1}], dtype=object), allow_pickle=True)  # refused, never unpickled
    lying = io.BytesIO()  # a header declaring a terabyte over 6 bytes of data
    np.lib.format.write_array_header_1_0(lying, {"descr": "<i2", "fortran_order": False,
                                                 "shape": (10**12,)})
    cases = (("tokenizer.meta.npz", b"PK\x03\x04 not a zip", "not a zip"),
             ("token_bytes.npy", pickled.getvalue(), "Python objects"),
             ("tokenizer.meta.npz", _npz(base_bytes=np.zeros(4, dtype=np.int16)), None),
             ("token_bytes.npy", lying.getvalue() + bytes(6), "more than the file holds"))
    for n, (name, data, why) in enumerate(cases):
        found = _audit(tmp_path / str(n), {"tokenizer.model": SAMPLE_TOKENIZER.read_bytes(), name: data})
        if why is None:  # the control: a plain table at the same path is read and checked
            assert by_rule(found, RULE, "INFO") and not by_rule(found, RULE, "WARN")
            continue
        [finding] = by_rule(found, RULE, "WARN")
        assert f"from {name} at line {LOAD_LINE}" in finding.message
        assert "cannot be read as plain arrays" in finding.message and why in finding.message


def test_a_table_the_run_never_loads_leaves_the_piece_count_certified(tmp_path):
    base, space = _true_tables(_sp())
    base[:] = 3
    script = SCRIPT.replace('    base, space = load_tables("tokenizer.model")',
                            '    base, space = piece_tables(spm.SentencePieceProcessor(model_file="tokenizer.model"))')
    found = _audit(tmp_path, {"tokenizer.model": SAMPLE_TOKENIZER.read_bytes(),
                              "tokenizer.meta.npz": _npz(base_bytes=base, has_leading_space=space)},
                   script=script)
    assert [f.severity for f in found if "counted from the tokenizer's pieces" in f.message]
    assert not any("tokenizer.meta.npz" in f.message for f in found)


def _u24(n: int) -> bytes:
    return n.to_bytes(3, "little")


def _tokenmonster_vocab(tokens: list[bytes], capcode=2) -> bytes:
    """A TokenMonster .vocab in its binary layout: header, one entry per token (id = position), and
    the 256 begin-byte flags."""
    out = bytes([capcode, 1, 1, 0, 0, 0, 0, 0]) + _u24(0xFFFFFF) + _u24(len(tokens)) + _u24(0)
    out += _u24(len(tokens)) + _u24(0xFFFFFF) + bytes([max(len(t) for t in tokens)])
    for i, token in enumerate(tokens):
        out += bytes([len(token)]) + token + bytes([0, 0]) + _u24(0xFFFFFF) * 2 + _u24(i) + bytes(4)
    return out + bytes(256)


# " the", "a", a lone byte, a capital marker, and a token outside ASCII that capitals may grow
TOKENS = [b" the", b"a", b"\x80", b"C", "\u00e9t\u00e9".encode()]


def test_a_table_counting_a_lone_byte_token_as_three_bytes_fails_against_a_tokenmonster_vocab(tmp_path):
    table = np.array([4, 1, 3, 0, 9], dtype=np.int16)  # the last is not judged
    found = _audit(tmp_path, {"tokenizer.vocab": _tokenmonster_vocab(TOKENS),
                              "tokenizer.meta.npz": _npz(base_bytes=table)})
    [finding] = by_rule(found, RULE, "FAIL")
    assert finding.line == READ_LINE
    assert finding.message.endswith("tokens of tokenizer.vocab stand for: base_bytes[2]=3 for "
                                    "single-byte token of 1 byte")


def test_a_table_matching_a_tokenmonster_vocab_is_noted_and_a_cut_one_is_a_warning(tmp_path):
    table = np.array([4, 1, 1, 0, 5], dtype=np.int16)
    found = _audit(tmp_path / "whole", {"tokenizer.vocab": _tokenmonster_vocab(TOKENS),
                                        "tokenizer.meta.npz": _npz(base_bytes=table)})
    assert [str(f.severity) for f in found] == ["INFO"]
    cut = _tokenmonster_vocab(TOKENS)[:60]
    [finding] = _audit(tmp_path / "cut", {"tokenizer.vocab": cut, "tokenizer.meta.npz": _npz(base_bytes=table)})
    assert str(finding.severity) == "WARN" and "tokenizer.vocab is not a TokenMonster vocabulary" in finding.message
