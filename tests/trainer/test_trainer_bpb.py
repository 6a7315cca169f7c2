import itertools
import lzma
import json

import pytest
import sentencepiece as spm
import torch

from trainer.bpb import build_byte_tables, load_tokenizer, target_bytes
from trainer.dataprep import iter_documents
from trainer.errors import TrainerError
from trainer_support import SAMPLE_DOCS, SAMPLE_TOKENIZER, stand_in_corpus


def _check_documents(sp, docs):
    """Per document: the target bytes after BOS sum to the UTF-8 length of the normalized text."""
    tables = build_byte_tables(sp, sp.vocab_size())
    checked = 0
    for text in docs:
        ids = [sp.bos_id()] + sp.encode(text)
        tokens = torch.tensor(ids)
        counted = int(target_bytes(tables, tokens[:-1], tokens[1:]).sum())
        normalized = sp.normalize(text).replace("\u2581", " ")
        assert counted == len(normalized.encode("utf-8")), text[:80]
        assert sp.decode(ids[1:]) == normalized
        checked += 1
    return checked


def test_sample_corpus_bytes_match_the_text():
    sp = spm.SentencePieceProcessor(model_file=str(SAMPLE_TOKENIZER))
    assert _check_documents(sp, itertools.islice(iter_documents([SAMPLE_DOCS]), 300)) == 300


@pytest.mark.parametrize("model", ["fineweb_1024_bpe.model", "stand_in_8192_bpe.model"])
def test_stand_in_corpus_bytes_match_the_text(model):
    corpus = stand_in_corpus()
    if corpus is None:
        pytest.skip("the stand-in corpus is not in this checkout (set PGOLF_CORPUS_DIR)")
    sp = spm.SentencePieceProcessor(model_file=str(corpus / model))
    with lzma.open(corpus / "docs.jsonl.xz", "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in itertools.islice(f, 400)]
    assert _check_documents(sp, docs) == 400


def test_table_entries():
    sp = spm.SentencePieceProcessor(model_file=str(SAMPLE_TOKENIZER))
    tables = build_byte_tables(sp, 1100)  # a model vocabulary larger than the tokenizer's
    for i in range(4):  # pad, bos, eos, unk
        assert tables.is_boundary[i] and tables.base_bytes[i] == 0
    assert all(tables.base_bytes[sp.piece_to_id(f"<0x{b:02X}>")] == 1 for b in (0, 65, 255))
    the = sp.piece_to_id("\u2581the")
    assert tables.has_leading_space[the] and tables.base_bytes[the] == 3
    assert tables.is_boundary[1024:].all() and tables.base_bytes.shape == (1100,)
    # After BOS the leading space is not part of the text; after a word it is.
    pair = torch.tensor([1, the])
    assert target_bytes(tables, pair[:1], pair[1:]).item() == 3
    pair = torch.tensor([the, the])
    assert target_bytes(tables, pair[:1], pair[1:]).item() == 4


def test_tokenizer_checks(tmp_path):
    assert load_tokenizer(SAMPLE_TOKENIZER, 1024).vocab_size() == 1024
    with pytest.raises(TrainerError, match="has 1024 pieces but VOCAB_SIZE=8192"):
        load_tokenizer(SAMPLE_TOKENIZER, 8192)
    with pytest.raises(TrainerError, match="does not exist"):
        load_tokenizer(tmp_path / "none.model", 1024)
    (tmp_path / "bad.model").write_bytes(b"not a model")
    with pytest.raises(TrainerError, match="is not a SentencePiece model"):
        load_tokenizer(tmp_path / "bad.model", 1024)
