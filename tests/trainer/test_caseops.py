"""CaseOps: the transform is lossless, and the tokens' byte counts sum to the original text."""

import itertools

import pytest
import sentencepiece as spm
from hypothesis import example, given, settings, strategies as st

from trainer import caseops
from trainer.caseops import ALLCAPS, CAPNEXT, ESC, TITLE, CaseOpsError, decode, encode
from trainer.dataprep import iter_documents, train_tokenizer
from trainer.errors import TrainerError
from trainer_support import SAMPLE_DOCS, SAMPLE_TOKENIZER

# Mostly ASCII letters of both cases, operators and word edges, with any other character mixed in.
SPECIAL = st.sampled_from("aAbBzZ" + TITLE + ALLCAPS + CAPNEXT + ESC + " .\u2581")
TEXT = st.text(st.one_of(SPECIAL, st.characters()), max_size=60)
# What a document can hold: no lone surrogates (iter_documents refuses them).
DOC_TEXT = st.text(st.one_of(SPECIAL, st.characters(exclude_categories=("Cs",))), max_size=60)


@pytest.mark.parametrize("text, encoded", [
    ("", ""),
    ("the cat", "the cat"),
    ("The NASA probe", f"{TITLE}the {ALLCAPS}nasa probe"),
    ("I saw A", f"{TITLE}i saw {TITLE}a"),
    ("McDonald iPhone ABc", f"{CAPNEXT}mc{CAPNEXT}donald i{CAPNEXT}phone {CAPNEXT}a{CAPNEXT}bc"),
    ("HTTPServer2X", f"{CAPNEXT}h{CAPNEXT}t{CAPNEXT}t{CAPNEXT}p{CAPNEXT}server2{TITLE}x"),
    ("Émile ÉCOLE İstanbul", f"Émile É{ALLCAPS}cole İstanbul"),  # runs of ASCII letters only
    (f"a{TITLE}b{ESC}", f"a{ESC}{TITLE}b{ESC}{ESC}"),   # operators in the text are escaped
])
def test_encode_examples(text, encoded):
    assert encode(text) == encoded
    assert decode(encoded) == text


@settings(max_examples=400, deadline=None)
@given(TEXT)
@example("\U0010ffff\x00\ud7ff\ufeffA")
def test_decode_inverts_encode(text):
    encoded = encode(text)
    assert decode(encoded) == text
    assert not any("A" <= c <= "Z" for c in encoded)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_decode_accepts_only_encodings(text):
    try:
        decoded = decode(text)
    except CaseOpsError:
        return
    assert encode(decoded) == text


@pytest.mark.parametrize("bad", [TITLE, ESC, f"{ESC}a", f"{CAPNEXT}A", f"{ALLCAPS}a",
                                 f"a{TITLE}b", f"{TITLE}abc{CAPNEXT}d", "Hello", f"{CAPNEXT}a"])
def test_malformed_encodings_are_refused(bad):
    with pytest.raises(CaseOpsError):
        decode(bad)


def test_normalizer_reads_text_as_the_challenge_tokenizers_do():
    sp = spm.SentencePieceProcessor(model_file=str(SAMPLE_TOKENIZER))
    norm = caseops.normalizer()
    texts = list(itertools.islice(iter_documents([SAMPLE_DOCS]), 50))
    texts += ["  two  spaces\tand\nlines ", "\uff21\uff22 \ufb01 \u2460", "a \u2581b"]
    for text in texts:
        assert norm.normalize(text) == sp.normalize(text).replace("\u2581", " ")


@pytest.fixture(scope="module")
def caseops_sp(tmp_path_factory):
    docs = itertools.islice(iter_documents([SAMPLE_DOCS]), 60)
    path = train_tokenizer(docs, 400, tmp_path_factory.mktemp("tok") / "co.model", threads=1,
                           caseops_text=True)
    return spm.SentencePieceProcessor(model_file=str(path))


def test_operators_are_pieces(caseops_sp):
    assert caseops.is_caseops(caseops_sp)
    assert not caseops.is_caseops(spm.SentencePieceProcessor(model_file=str(SAMPLE_TOKENIZER)))
    ids = caseops_sp.encode(encode("The LORD"))
    assert [caseops_sp.id_to_piece(i) for i in ids][:1] == [TITLE]


@settings(max_examples=300, deadline=None)
@given(DOC_TEXT)
@example("The NASA  \u2581 caf\u00e9 \U0001f600 " + TITLE)
def test_token_bytes_sum_to_the_original_text(caseops_sp, text):
    norm = caseops.normalizer()
    original = norm.normalize(text).replace("\u2581", " ")
    encoded = caseops.tokenizer_input(text, norm)
    ids = caseops_sp.encode(encoded)
    assert caseops_sp.decode(ids) == encoded and decode(encoded) == original
    counts = caseops.original_bytes(encoded, ids, caseops.piece_bytes(caseops_sp))
    assert len(counts) == len(ids) and (counts >= 0).all()
    assert int(counts.sum()) == len(original.encode("utf-8"))


def test_operator_tokens_count_no_bytes(caseops_sp):
    encoded = encode("The NASA")
    ids = caseops_sp.encode(encoded)
    counts = caseops.original_bytes(encoded, ids, caseops.piece_bytes(caseops_sp))
    pieces = [caseops_sp.id_to_piece(i) for i in ids]
    assert [int(c) for p, c in zip(pieces, counts) if p in (TITLE, ALLCAPS)] == [0, 0]
    assert int(counts.sum()) == len("The NASA")


def test_a_tokenizer_that_normalizes_is_refused(caseops_sp):
    plain = spm.SentencePieceProcessor(model_file=str(SAMPLE_TOKENIZER))
    text = "a  b"  # the plain tokenizer folds the two spaces: its pieces miss a byte
    with pytest.raises(TrainerError, match="does not reproduce its input"):
        caseops.original_bytes(text, plain.encode(text), caseops.piece_bytes(plain))
