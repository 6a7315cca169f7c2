"""`pgolf data`: tokenizer training, shard writing and verification on the sample corpus."""

import itertools
import json

import numpy as np
import pytest
import sentencepiece as spm
from click.testing import CliRunner

from pgolf_cli.main import cli
from trainer.dataprep import iter_documents
from trainer.shards import open_shard
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
    result = run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d")
    assert result.exit_code == 2 and "leaves no training documents" in result.output
    result = run("shards", docs_file, "--tokenizer", SAMPLE_TOKENIZER, "--out-dir", tmp_path / "d",
                 "--num-val-docs", 1, "--val-frac", 0.1)
    assert result.exit_code == 2 and "not both" in result.output
