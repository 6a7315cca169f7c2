"""`pgolf data fineweb`: the challenge's published FineWeb shards and tokenizer, from the Hub.

The challenge's download script (data/cached_challenge_fineweb.py) reads a dataset repository on
the Hugging Face Hub laid out as

  datasets/manifest.json                    every dataset: its tokenizer, shard and token counts
  datasets/datasets/fineweb10B_sp<V>/fineweb_{val,train}_NNNNNN.bin
  datasets/<the tokenizer's model_path>     e.g. tokenizers/fineweb_8192_bpe.model

sp1024 is published in willdepueoai/parameter-golf, sp8192 (the records' vocabulary since April
2026) in kevclark/parameter-golf. Files land where `pgolf train` reads them:
<data-dir>/datasets/fineweb10B_sp<V>/ and <data-dir>/tokenizers/.

Resumable: a file already in place that passes its check is kept (a damaged one is fetched again);
an interrupted download resumes from huggingface_hub's cache, which keeps the partial file. Each
shard is checked before it is put in place (header, token count against its size, token ids
below the vocabulary); all validation shards together must hold the manifest's validation token
count; the tokenizer must load with the variant's vocabulary size. Files are put in place by a
hard link to the cache (no second copy of the 16 GB; shards are only read) or a copy, then a
rename: never half a file.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from pgolf_cli.errors import PgolfError
from trainer.errors import TrainerError

VARIANTS = {"sp1024": ("willdepueoai/parameter-golf", 1024),
            "sp8192": ("kevclark/parameter-golf", 8192)}
PREFIX = "datasets"  # the export's folder inside the repository
MANIFEST_MAX_BYTES = 1 << 20


def fetch(variant: str, data_dir: Path, train_shards: int, *, repo: str | None = None,
          echo: Callable[[str], None] = print) -> dict:
    """Download `variant`'s validation shards, its first `train_shards` training shards and its
    tokenizer into `data_dir`; returns what is there. PgolfError (one line) on any problem."""
    repo = repo or VARIANTS[variant][0]
    vocab = VARIANTS[variant][1]
    name = f"fineweb10B_{variant}"
    entry, tokenizer = _manifest(repo, name)
    stats = entry.get("stats") or {}
    n_val, n_train = _count(stats, "files_val"), _count(stats, "files_train")
    if train_shards > n_train:
        raise PgolfError(f"{repo} publishes {n_train} training shards of {name}; "
                         f"--train-shards {train_shards} asks for more")
    folder = data_dir / "datasets" / name
    wanted = ([f"fineweb_val_{i:06d}.bin" for i in range(n_val)]
              + [f"fineweb_train_{i:06d}.bin" for i in range(train_shards)])
    tokens = {"val": 0, "train": 0}
    for i, shard in enumerate(wanted, 1):
        count, how = _get(repo, f"{PREFIX}/datasets/{name}/{shard}", folder / shard,
                          lambda path: _check_shard(path, vocab))
        tokens["val" if "_val_" in shard else "train"] += count
        echo(f"[{i}/{len(wanted) + 1}] {name}/{shard}: {count:,} tokens ({how})")
    expected_val = stats.get("tokens_val")
    if isinstance(expected_val, int) and tokens["val"] != expected_val:
        raise PgolfError(f"{folder}: the validation shards hold {tokens['val']:,} tokens, the "
                         f"manifest says {expected_val:,}")
    model = _safe_relative(tokenizer)
    _, how = _get(repo, f"{PREFIX}/{model}", data_dir / "tokenizers" / model.name,
                  lambda path: _check_tokenizer(path, vocab))
    echo(f"[{len(wanted) + 1}/{len(wanted) + 1}] tokenizers/{model.name}: {vocab} pieces ({how})")
    return {"folder": folder, "tokenizer": data_dir / "tokenizers" / model.name,
            "val_tokens": tokens["val"], "train_tokens": tokens["train"],
            "val_shards": n_val, "train_shards": train_shards}


def _hub_file(repo: str, path: str) -> Path:
    """The file at `path` in the dataset repository `repo`, through huggingface_hub's cache
    (which resumes a partial download; HF_HUB_OFFLINE=1 reads the cache only)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    remote = PurePosixPath(path)
    try:
        return Path(hf_hub_download(repo_id=repo, filename=remote.name, repo_type="dataset",
                                    subfolder=str(remote.parent))).resolve(strict=True)
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PgolfError(f"{repo}: cannot get {path} ({reason})") from None


def _manifest(repo: str, name: str) -> tuple[dict, str]:
    """The manifest's entry for dataset `name` and its tokenizer's model path."""
    path = _hub_file(repo, f"{PREFIX}/manifest.json")
    if path.stat().st_size > MANIFEST_MAX_BYTES:
        raise PgolfError(f"{repo}: {PREFIX}/manifest.json is over {MANIFEST_MAX_BYTES:,} bytes")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        entry = next(d for d in manifest["datasets"] if d.get("name") == name)
        tokenizer = next(t for t in manifest["tokenizers"]
                         if t.get("name") == entry.get("tokenizer_name"))["model_path"]
    except (ValueError, KeyError, TypeError, AttributeError, StopIteration):
        raise PgolfError(f"{repo}: {PREFIX}/manifest.json has no readable entry for {name} and "
                         "its tokenizer") from None
    if not isinstance(tokenizer, str):
        raise PgolfError(f"{repo}: the manifest's tokenizer path for {name} is not a string")
    return entry, tokenizer


def _count(stats: dict, key: str) -> int:
    value = stats.get(key)
    if not isinstance(value, int) or not 0 <= value < 1_000_000:
        raise PgolfError(f"the manifest's {key} is {value!r}, not a shard count")
    return value


def _safe_relative(path: str) -> PurePosixPath:
    """A manifest path inside the export: relative, without '..'."""
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or not p.parts or not p.name.endswith(".model"):
        raise PgolfError(f"the manifest's tokenizer path {path!r} is not a .model file inside the export")
    return p


def _get(repo: str, remote: str, dest: Path, check: Callable[[Path], int]) -> tuple[int, str]:
    """Put the checked file `remote` at `dest` unless a file that passes the check is there;
    returns the check's figure and what was done."""
    if dest.is_file():
        try:
            return check(dest), "already there"
        except PgolfError:
            dest.unlink()  # a damaged copy: fetched again below
    source = _hub_file(repo, remote)
    try:
        figure = check(source)
    except PgolfError as exc:
        raise PgolfError(f"{exc}; this is huggingface_hub's cached copy of {remote}: delete it "
                         "and run again to download it afresh") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp{os.getpid()}")
    try:
        try:
            os.link(source, tmp)  # same disk as the cache: no second copy
        except OSError:
            shutil.copyfile(source, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return figure, "downloaded"


def _check_shard(path: Path, vocab: int) -> int:
    from trainer.shards import open_shard, shard_token_count  # numpy: loaded when a command runs

    try:
        count = shard_token_count(path)
        tokens = open_shard(path)
    except TrainerError as exc:
        raise PgolfError(str(exc)) from None
    if count and int(tokens.max()) >= vocab:
        raise PgolfError(f"{path}: token id {int(tokens.max())} is not below the vocabulary size {vocab}")
    return count


def _check_tokenizer(path: Path, vocab: int) -> int:
    import sentencepiece as spm

    try:
        size = spm.SentencePieceProcessor(model_file=str(path)).vocab_size()
    except (OSError, RuntimeError) as exc:
        raise PgolfError(f"{path}: not a SentencePiece model ({exc})") from None
    if size != vocab:
        raise PgolfError(f"{path}: {size} pieces, the variant needs {vocab}")
    return size
