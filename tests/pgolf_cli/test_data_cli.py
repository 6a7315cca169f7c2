"""`pgolf data`: tokenizer training, shard writing and verification on the sample corpus."""

import itertools
import json
import shutil

import numpy as np
import pytest
import sentencepiece as spm
import torch
from click.testing import CliRunner

from pgolf_cli.main import cli
from trainer import caseops
from trainer.bpb import build_byte_tables, target_bytes
from trainer.dataprep import iter_documents
from trainer.shards import open_shard, write_shard
from trainer_support import SAMPLE_DOCS, SAMPLE_TOKENIZER


def run(*args):
    return CliRunner().invoke(cli, ["data", *map(str, args)], catch_exceptions=False)


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    with path.open("w") as f:
        for text in itertools.islice(iter_documents([SAMPLE_DOCS]), 40):
            f.write(json.dumps({"text": text}) + "\n")
    return path


def test_tokenizer_with_the_challenge_settings(docs_file, tmp_path):
    numbers = tmp_path / "numbers.jsonl"  # frequent years: a merged "1999" would be learned
    numbers.write_text("".join(json.dumps({"text": "In 1999 and 2024. " * 100}) + "\n" for _ in range(20)))
    result = run("tokenizer", docs_file, numbers, "--vocab-size", 400, "--out", tmp_path / "t.model",
                 "--num-val-docs", 4)
    assert result.exit_code == 0, result.output
    assert "the first 4 documents left out" in result.output
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "t.model"))
    assert (sp.vocab_size(), sp.pad_id(), sp.bos_id(), sp.eos_id(), sp.unk_id()) == (400, 0, 1, 2, 3)
    assert sp.is_byte(4) and sp.id_to_piece(4) == "<0x00>"     # byte fallback
    assert sp.encode("1999", out_type=str) == ["1", "9", "9", "9"]  # split digits
    assert not sp.encode("And", out_type=str)[0].startswith("\u2581")  # no dummy prefix


def test_shards_hold_bos_and_each_document_in_order(docs_file, tmp_path):
    result = run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d",
                 "--num-val-docs", 5, "--shard-tokens", 20000, "--workers", 1)
    assert result.exit_code == 0, result.output
    assert "val: 5 docs" in result.output and "train: 35 docs" in result.output
    sp = spm.SentencePieceProcessor(model_file=str(SAMPLE_TOKENIZER))
    texts = list(iter_documents([docs_file]))
    val = np.concatenate([open_shard(p) for p in sorted((tmp_path / "d").glob("fineweb_val_*.bin"))])
    expected = [t for text in texts[:5] for t in [1] + sp.encode(text)]
    assert val.tolist() == expected
    train = sorted((tmp_path / "d").glob("fineweb_train_*.bin"))
    assert len(train) > 1  # 20,000-token shards; documents run on across them
    assert run("verify", tmp_path / "d", "--tokenizer", SAMPLE_TOKENIZER).exit_code == 0


def test_all_cores_write_the_same_bytes(docs_file, tmp_path):
    for workers in (1, 2):
        assert run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / str(workers),
                   "--val-frac", 0.1, "--workers", workers).exit_code == 0
    for one in (tmp_path / "1").iterdir():
        assert one.read_bytes() == (tmp_path / "2" / one.name).read_bytes()


def test_text_files_are_documents(tmp_path):
    (tmp_path / "in").mkdir()
    for i in range(3):
        (tmp_path / "in" / f"{i}.txt").write_text(f"Document number {i}. " * 20)
    result = run("shards", tmp_path / "in", "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d",
                 "--num-val-docs", 1)
    assert result.exit_code == 0 and "val: 1 docs" in result.output and "train: 2 docs" in result.output


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "fineweb_train_000000.bin").write_bytes(b"x" * 2000), "is not a token shard"),
    (lambda d: (d / "fineweb_val_000000.bin").unlink(), "no fineweb_val_*.bin shards"),
])
def test_verify_names_the_bad_shard(docs_file, tmp_path, damage, message):
    run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path, "--num-val-docs", 2)
    damage(tmp_path)
    result = run("verify", tmp_path)
    assert result.exit_code == 2 and message in result.output and result.output.count("\n") == 1


def test_verify_checks_ids_against_the_vocabulary(docs_file, tmp_path):
    run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path, "--num-val-docs", 2)
    result = run("verify", tmp_path, "--vocab-size", 300)
    assert result.exit_code == 2 and "is not below the vocabulary size 300" in result.output


def test_bad_input_is_one_line(docs_file, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"body": "no text"}\n')
    result = run("shards", bad, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d")
    assert result.exit_code == 2 and f"{bad}:2: expected a JSON object" in result.output
    bad.write_text('{"text": "fine"}\n{"text": 7}\n')
    result = run("shards", bad, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d")
    assert result.exit_code == 2 and f"{bad}:2: expected a JSON object" in result.output
    bad.write_text('{"text": "fine"}\n{"text": "half \\ud800 a pair"}\n')
    result = run("shards", bad, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d")
    assert result.exit_code == 2 and f"{bad}:2: the text holds a lone surrogate" in result.output
    result = run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d")
    assert result.exit_code == 2 and "leaves no training documents" in result.output
    result = run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d",
                 "--num-val-docs", 1, "--val-frac", 0.1)
    assert result.exit_code == 2 and "not both" in result.output


@pytest.fixture(scope="module")
def caseops_data(docs_file, tmp_path_factory):
    """A CaseOps tokenizer and its shards (5 validation documents, 3,000-token shards)."""
    root = tmp_path_factory.mktemp("caseops")
    result = run("tokenizer", docs_file, "--caseops", "--vocab-size", 400, "--out", root / "co.model",
                 "--num-val-docs", 5)
    assert result.exit_code == 0, result.output
    result = run("shards", docs_file, "--caseops", "--tokenizer", root / "co.model", "--out-dir",
                 root / "d", "--num-val-docs", 5, "--shard-tokens", 3000, "--workers", 1)
    assert result.exit_code == 0, result.output
    assert "val: 5 docs" in result.output and "and their byte sidecar" in result.output
    return root


def test_caseops_sidecar_counts_each_document_s_original_bytes(docs_file, caseops_data):
    folder = caseops_data / "d"
    vals = sorted(folder.glob("fineweb_val_[0-9]*.bin"))
    assert len(vals) > 1  # the sidecar follows the shards' cuts
    assert [p.name for p in sorted(folder.glob("fineweb_val_bytes_*.bin"))] == \
        [p.name.replace("val_", "val_bytes_") for p in vals]
    tokens = np.concatenate([open_shard(p) for p in vals]).astype(np.int64)
    nbytes = np.concatenate([open_shard(p.with_name(p.name.replace("val_", "val_bytes_"))) for p in vals])
    assert nbytes.size == tokens.size and not nbytes[tokens == 1].any()
    co = spm.SentencePieceProcessor(model_file=str(caseops_data / "co.model"))
    plain = spm.SentencePieceProcessor(model_file=str(SAMPLE_TOKENIZER))
    tables = build_byte_tables(plain, plain.vocab_size())
    starts = np.flatnonzero(tokens == 1).tolist() + [tokens.size]
    texts = list(iter_documents([docs_file]))[:5]
    for text, a, b in zip(texts, starts, starts[1:]):
        original = plain.normalize(text).replace("\u2581", " ")
        assert caseops.decode(co.decode(tokens[a + 1:b].tolist())) == original
        assert int(nbytes[a:b].sum()) == len(original.encode("utf-8"))
        # the same bytes as the plain tokenizer's tables count for the same document
        ids = torch.tensor([1] + plain.encode(text))
        assert int(nbytes[a:b].sum()) == int(target_bytes(tables, ids[:-1], ids[1:]).sum())
    # training shards are plain CaseOps tokens, without a sidecar
    assert sorted(folder.glob("fineweb_train_*.bin")) and (tokens < co.vocab_size()).all()
    result = run("verify", folder, "--tokenizer", caseops_data / "co.model")
    assert result.exit_code == 0 and "and their byte sidecar" in result.output


def test_caseops_shards_are_the_same_on_all_cores(docs_file, caseops_data, tmp_path):
    assert run("shards", docs_file, "--caseops", "--tokenizer", caseops_data / "co.model", "--out-dir",
               tmp_path, "--num-val-docs", 5, "--shard-tokens", 3000, "--workers", 2).exit_code == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in (caseops_data / "d").iterdir())
    for name in written:
        assert (tmp_path / name).read_bytes() == (caseops_data / "d" / name).read_bytes()


def test_tokenizer_and_shards_must_agree_on_caseops(docs_file, caseops_data, tmp_path):
    result = run("shards", docs_file, "--caseops", "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path,
                 "--num-val-docs", 5)
    assert result.exit_code == 2 and "is not a CaseOps tokenizer" in result.output
    result = run("shards", docs_file, "--tokenizer", caseops_data / "co.model", "--out-dir", tmp_path,
                 "--num-val-docs", 5)
    assert result.exit_code == 2 and "write its shards with --caseops" in result.output


def _sidecar(folder, i=0):
    return folder / f"fineweb_val_bytes_{i:06d}.bin"


def _counts(folder):
    return np.array(open_shard(_sidecar(folder)))  # a copy: the file is rewritten from it


@pytest.mark.parametrize("damage, message", [
    (lambda d: [p.unlink() for p in d.glob("fineweb_val_bytes_*")], "have no byte sidecar"),
    (lambda d: _sidecar(d, 1).unlink(), "does not match the validation shards"),
    (lambda d: write_shard(_sidecar(d), _counts(d)[:-1]), "byte counts for the"),
    (lambda d: write_shard(_sidecar(d), _counts(d) + 1), "a BOS token of fineweb_val_000000"),
])
def test_verify_names_a_bad_sidecar(caseops_data, tmp_path, damage, message):
    folder = tmp_path / "d"
    shutil.copytree(caseops_data / "d", folder)
    damage(folder)
    result = run("verify", folder, "--tokenizer", caseops_data / "co.model")
    assert result.exit_code == 2 and message in result.output and result.output.count("\n") == 1


def test_plain_shards_written_over_caseops_data_leave_no_sidecar(docs_file, caseops_data, tmp_path):
    shutil.copytree(caseops_data / "d", tmp_path / "d")
    assert run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d",
               "--num-val-docs", 5).exit_code == 0
    assert not list((tmp_path / "d").glob("fineweb_val_bytes_*")) and run("verify", tmp_path / "d").exit_code == 0
