"""Text to tokenizer to token shards, as the challenge prepares FineWeb (`pgolf data`).

- Documents: JSONL lines with a "text" field, or whole .txt files (optionally .xz/.gz).
- Tokenizer: SentencePiece BPE with the challenge's trainer settings
  (data/download_hf_docs_and_tokenize.py): byte fallback, split digits, nmt_nfkc, no dummy
  prefix, character coverage 0.999, ids 0-3 = pad/bos/eos/unk, soft vocabulary limit.
- Shards: each document becomes [BOS=1] + its tokens; the first N documents go to the validation
  split, the rest to training; tokens stream into shards of at most SHARD_TOKENS.
- CaseOps (`caseops_text=True`, trainer/caseops.py): the tokenizer is trained on, and encodes, the
  normalized text with its case turned into operator symbols (reserved as pieces; identity
  normalization, so the tokens decode to exactly that string). Each validation shard gets a byte
  sidecar, fineweb_val_bytes_NNNNNN.bin: the same header and length, one uint16 per token, the
  UTF-8 bytes of the text before the transform that the token stands for (0 for BOS), as the
  records' prepare_caseops_data.py writes it.
Not part of the bundled train_gpt.py: runs only need the shards.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import lzma
import multiprocessing
import os
from pathlib import Path
from collections.abc import Iterable, Iterator

import numpy as np
import sentencepiece as spm

from trainer import caseops
from trainer.errors import TrainerError
from trainer.shards import (BOS_ID, open_shard, shard_paths, read_sidecar, shard_token_count,
                            sidecar_name, sidecar_paths, write_shard)

SHARD_TOKENS = 10**8  # the challenge's shard size
# SentencePiece skips training "sentences" longer than its max_sentence_length (4,192 bytes), so
# long documents are cut at line breaks into pieces below that for tokenizer training only.
SENTENCE_BYTES = 4000

TOKENIZER_SETTINGS = dict(
    model_type="bpe", character_coverage=0.999, byte_fallback=True, split_digits=True,
    normalization_rule_name="nmt_nfkc", add_dummy_prefix=False,
    pad_id=0, bos_id=BOS_ID, eos_id=2, unk_id=3, hard_vocab_limit=False,
)
# The text is normalized before the transform (caseops.tokenizer_input); normalizing it again
# could undo the transform (NFKC composes "j" + a combining caron, never "J" + one).
CASEOPS_SETTINGS = dict(TOKENIZER_SETTINGS, normalization_rule_name="identity",
                        remove_extra_whitespaces=False, user_defined_symbols=list(caseops.OPERATORS))


def _open_text(path: Path):
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    return opener(path, "rt", encoding="utf-8")


def input_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, and the .jsonl/.txt (optionally compressed) files of folders named, sorted."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and _kind(p))
        elif path.is_file():
            if not _kind(path):
                raise TrainerError(f"{path}: expected .jsonl or .txt (optionally .xz or .gz)")
            found.append(path)
        else:
            raise TrainerError(f"{path} does not exist")
    if not found:
        raise TrainerError("no .jsonl or .txt input files found")
    return found


def _kind(path: Path) -> str | None:
    name = path.name[: -len(path.suffix)] if path.suffix in (".xz", ".gz") else path.name
    return "jsonl" if name.endswith(".jsonl") else "txt" if name.endswith(".txt") else None


def iter_documents(paths: Iterable[str | Path]) -> Iterator[str]:
    """Every document of the inputs, in order."""
    for path in input_files(paths):
        with _open_text(path) as f:
            if _kind(path) == "txt":
                yield f.read()
                continue
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    text = json.loads(line)["text"]
                    text.encode("utf-8")  # a "\ud800" escape reads as a lone surrogate: no text
                except UnicodeEncodeError:
                    raise TrainerError(f"{path}:{line_no}: the text holds a lone surrogate, "
                                       "which is not Unicode text") from None
                except (ValueError, KeyError, TypeError, AttributeError):
                    raise TrainerError(f"{path}:{line_no}: expected a JSON object with a "
                                       "\"text\" field") from None
                yield text


def tokenizer_sentences(text: str, limit: int = SENTENCE_BYTES) -> Iterator[str]:
    """`text` cut at line breaks into pieces of at most `limit` UTF-8 bytes."""
    text = text.replace("\x00", " ").strip()
    piece: list[str] = []
    size = 0
    for line in text.split("\n"):
        while len(line.encode("utf-8")) > limit:  # one very long line: cut it by characters
            yield line[: limit // 4]
            line = line[limit // 4:]
        if piece and size + len(line.encode("utf-8")) + 1 > limit:
            yield "\n".join(piece)
            piece, size = [], 0
        piece.append(line)
        size += len(line.encode("utf-8")) + 1
    if piece and any(piece):
        yield "\n".join(piece)


def _caseops_sentences(doc: str, norm) -> Iterator[str]:
    """`doc` cut at its line breaks (normalizing turns them into spaces), then transformed; a
    piece the operators made too long is cut again."""
    for piece in tokenizer_sentences(doc):
        yield from tokenizer_sentences(caseops.tokenizer_input(piece, norm))


def train_tokenizer(docs: Iterable[str], vocab_size: int, model_path: str | Path,
                    threads: int | None = None, caseops_text: bool = False) -> Path:
    """Train a SentencePiece BPE model with the challenge's settings (or CaseOps' on the
    transformed text); writes .model and .vocab."""
    model_path = Path(model_path)
    if model_path.suffix != ".model":
        raise TrainerError(f"{model_path}: the tokenizer file name must end in .model")
    model_path.parent.mkdir(parents=True, exist_ok=True)
    if caseops_text:
        norm = caseops.normalizer()
        sentences = (s for doc in docs for s in _caseops_sentences(doc, norm))
    else:
        sentences = (s for doc in docs for s in tokenizer_sentences(doc))
    settings = CASEOPS_SETTINGS if caseops_text else TOKENIZER_SETTINGS
    spm.SentencePieceTrainer.train(sentence_iterator=sentences, vocab_size=vocab_size,
                                   model_prefix=str(model_path.with_suffix("")),
                                   num_threads=threads or os.cpu_count() or 1,
                                   minloglevel=2, **settings)
    return model_path


@dataclasses.dataclass
class SplitSummary:
    docs: int = 0
    tokens: int = 0
    files: list[str] = dataclasses.field(default_factory=list)
    sidecar_files: list[str] = dataclasses.field(default_factory=list)  # CaseOps validation only


class _ShardWriter:
    """Tokens into shards of `shard_tokens`; with `sidecar`, each token's byte count into a
    sidecar shard of the same name and length."""

    def __init__(self, out_dir: Path, split: str, shard_tokens: int, summary: SplitSummary,
                 sidecar: bool = False):
        self.out_dir, self.split, self.summary = out_dir, split, summary
        self.buf = np.empty(shard_tokens, dtype=np.uint16)
        # a piece holds at most 16 characters (SentencePiece's max_piece_length): its count fits
        self.bytes = np.empty(shard_tokens, dtype=np.uint16) if sidecar else None
        self.fill = 0

    def add(self, tokens: np.ndarray, nbytes: np.ndarray | None) -> None:
        pos = 0
        while pos < tokens.size:
            take = min(self.buf.size - self.fill, tokens.size - pos)
            self.buf[self.fill:self.fill + take] = tokens[pos:pos + take]
            if self.bytes is not None:
                self.bytes[self.fill:self.fill + take] = nbytes[pos:pos + take]
            self.fill, pos = self.fill + take, pos + take
            if self.fill == self.buf.size:
                self.flush()

    def flush(self) -> None:
        if self.fill:
            name = f"fineweb_{self.split}_{len(self.summary.files):06d}.bin"
            write_shard(self.out_dir / name, self.buf[:self.fill])
            self.summary.files.append(name)
            if self.bytes is not None:
                write_shard(self.out_dir / sidecar_name(name), self.bytes[:self.fill])
                self.summary.sidecar_files.append(sidecar_name(name))
            self.summary.tokens += self.fill
            self.fill = 0


_worker_sp: spm.SentencePieceProcessor | None = None
_worker_caseops = None  # (normalizer, bytes per piece) when the shards are CaseOps'


def _init_worker(model_path: str, caseops_text: bool) -> None:
    global _worker_sp, _worker_caseops
    _worker_sp = spm.SentencePieceProcessor(model_file=model_path)
    _worker_caseops = (caseops.normalizer(), caseops.piece_bytes(_worker_sp)) if caseops_text else None


def _encode(task: tuple[str, list[str]]) -> tuple[str, int, np.ndarray, np.ndarray | None]:
    """A chunk's tokens, BOS before each document; for CaseOps validation documents, also
    each token's bytes of the text before the transform (0 for BOS)."""
    split, texts = task
    if _worker_caseops is not None:
        texts = [caseops.tokenizer_input(t, _worker_caseops[0]) for t in texts]
    ids = _worker_sp.encode(texts, out_type=int)
    sidecar = _worker_caseops is not None and split == "val"
    out = np.empty(sum(len(x) + 1 for x in ids), dtype=np.uint16)
    nbytes = np.zeros(out.size, dtype=np.int64) if sidecar else None
    pos = 0
    for text, doc in zip(texts, ids):
        out[pos] = BOS_ID
        out[pos + 1:pos + 1 + len(doc)] = doc
        if sidecar:
            nbytes[pos + 1:pos + 1 + len(doc)] = caseops.original_bytes(text, doc, _worker_caseops[1])
        pos += 1 + len(doc)
    return split, len(texts), out, nbytes


def _chunks(docs: Iterable[str], num_val_docs: int, size: int) -> Iterator[tuple[str, list[str]]]:
    """Documents in order, in chunks that never mix the two splits."""
    chunk: list[str] = []
    split = "val" if num_val_docs > 0 else "train"
    for i, text in enumerate(docs):
        doc_split = "val" if i < num_val_docs else "train"
        if chunk and (doc_split != split or len(chunk) == size):
            yield split, chunk
            chunk = []
        split = doc_split
        chunk.append(text)
    if chunk:
        yield split, chunk


def write_shards(docs: Iterable[str], tokenizer: str | Path, out_dir: str | Path,
                 num_val_docs: int, shard_tokens: int = SHARD_TOKENS,
                 workers: int | None = None, chunk_docs: int = 256,
                 caseops_text: bool = False) -> dict[str, SplitSummary]:
    """Tokenize `docs` into val and train shards in `out_dir` (replacing old shards there);
    with `caseops_text`, the CaseOps text and the validation byte sidecar."""
    sp = spm.SentencePieceProcessor(model_file=str(tokenizer))
    if sp.bos_id() != BOS_ID or sp.vocab_size() > 2**16:
        raise TrainerError(f"{tokenizer}: shards need BOS id {BOS_ID} and at most 65536 pieces "
                           f"(it has BOS {sp.bos_id()} and {sp.vocab_size()} pieces)")
    if caseops.is_caseops(sp) != caseops_text:
        raise TrainerError(f"{tokenizer} is not a CaseOps tokenizer (train one with `pgolf data "
                           "tokenizer --caseops`)" if caseops_text else
                           f"{tokenizer} is a CaseOps tokenizer: write its shards with --caseops")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in list(out_dir.glob("fineweb_train_*.bin")) + list(out_dir.glob("fineweb_val_*.bin")):
        stale.unlink()  # the val glob takes the old byte sidecar too
    summary = {"val": SplitSummary(), "train": SplitSummary()}
    writers = {s: _ShardWriter(out_dir, s, shard_tokens, summary[s], caseops_text and s == "val")
               for s in summary}
    workers = workers or os.cpu_count() or 1
    tasks = _chunks(docs, num_val_docs, chunk_docs)
    if workers > 1:
        with multiprocessing.get_context("spawn").Pool(workers, _init_worker,
                                                       (str(tokenizer), caseops_text)) as pool:
            for split, count, tokens, nbytes in pool.imap(_encode, tasks, chunksize=1):
                writers[split].add(tokens, nbytes)
                summary[split].docs += count
    else:
        _init_worker(str(tokenizer), caseops_text)
        for split, count, tokens, nbytes in map(_encode, tasks):
            writers[split].add(tokens, nbytes)
            summary[split].docs += count
    for writer in writers.values():
        writer.flush()
    if summary["val"].docs < num_val_docs or not summary["train"].docs:
        total = summary["val"].docs + summary["train"].docs
        raise TrainerError(f"the input has {total} documents; a validation split of {num_val_docs} "
                           "leaves no training documents (choose a smaller validation split)")
    return summary


def verify_shards(folder: str | Path, vocab_size: int | None = None) -> dict[str, SplitSummary]:
    """Check every shard of a dataset folder: header, size, token ids below `vocab_size`,
    a BOS at the start of each split, a byte sidecar (if any) that matches the validation
    shards; returns documents (BOS count) and tokens per split."""
    summary = {}
    for split in ("val", "train"):
        result = SplitSummary()
        paths = shard_paths(folder, split)
        if split == "val" and read_sidecar(paths) is not None:
            result.sidecar_files = [p.name for p in sidecar_paths(paths)]
        for i, path in enumerate(paths):
            shard_token_count(path)
            tokens = open_shard(path)
            if i == 0 and (tokens.size == 0 or tokens[0] != BOS_ID):
                raise TrainerError(f"{path}: the split does not start with BOS={BOS_ID}")
            if vocab_size is not None and tokens.size and int(tokens.max()) >= vocab_size:
                raise TrainerError(f"{path}: token id {int(tokens.max())} is not below the "
                                   f"vocabulary size {vocab_size}")
            result.docs += int(np.count_nonzero(tokens == BOS_ID))
            result.tokens += tokens.size
            result.files.append(path.name)
        summary[split] = result
    return summary
