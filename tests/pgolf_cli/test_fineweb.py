"""`pgolf data fineweb` against a Hub repository laid out in huggingface_hub's own cache, read by
the real library in offline mode (HF_HUB_OFFLINE=1): no network, the real download code."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from trainer.config import load_config
from trainer.preflight import find_data
from trainer.shards import write_shard
from trainer_support import SAMPLE_TOKENIZER

REPO_ID = "willdepueoai/parameter-golf"  # where sp1024 is published
COMMIT = "0123456789abcdef0123456789abcdef01234567"
VAL = [np.array([1, 5, 6, 7] * 50), np.array([1, 9, 9] * 30)]
TRAIN = [np.array([1, 2, 3, 4, 5] * (40 + i)) for i in range(3)]


def hub_cache(root, *, val_tokens=None, tokenizer="tokenizers/fineweb_1024_bpe.model", shards=None):
    """A dataset repository as huggingface_hub caches it: refs/main names a snapshot holding the
    export under datasets/ (manifest, shards, tokenizer)."""
    repo = root / ("datasets--" + REPO_ID.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    export = repo / "snapshots" / COMMIT / "datasets"
    folder = export / "datasets" / "fineweb10B_sp1024"
    folder.mkdir(parents=True)
    for name, tokens in (shards or _shards()).items():
        write_shard(folder / name, tokens)
    (export / "tokenizers").mkdir()
    (export / "tokenizers" / "fineweb_1024_bpe.model").write_bytes(SAMPLE_TOKENIZER.read_bytes())
    stats = {"files_val": len(VAL), "files_train": len(TRAIN),
             "tokens_val": sum(t.size for t in VAL) if val_tokens is None else val_tokens}
    manifest = {"datasets": [{"name": "fineweb10B_sp1024", "tokenizer_name": "sp_bpe_1024",
                              "stats": stats}],
                "tokenizers": [{"name": "sp_bpe_1024", "model_path": tokenizer}]}
    (export / "manifest.json").write_text(json.dumps(manifest))
    return root


def _shards():
    return {**{f"fineweb_val_{i:06d}.bin": t for i, t in enumerate(VAL)},
            **{f"fineweb_train_{i:06d}.bin": t for i, t in enumerate(TRAIN)}}


def fineweb(cache, data_dir, *args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_HOME": str(cache)}
    return subprocess.run([sys.executable, "-m", "pgolf_cli", "data", "fineweb", "--variant", "sp1024",
                           "--data-dir", str(data_dir), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def cache(tmp_path):
    return hub_cache(tmp_path / "cache")


def test_the_download_lands_where_train_reads_it_and_resumes(cache, tmp_path):
    data = tmp_path / "data"
    result = fineweb(cache, data, "--train-shards", 2)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "[1/5] fineweb10B_sp1024/fineweb_val_000000.bin: 200 tokens (downloaded)"
    assert lines[3] == "[4/5] fineweb10B_sp1024/fineweb_train_000001.bin: 205 tokens (downloaded)"
    assert lines[4] == "[5/5] tokenizers/fineweb_1024_bpe.model: 1024 pieces (downloaded)"
    assert "2 validation shard(s), 290 tokens; 2 training shard(s), 405 tokens" in lines[5]
    folder = data / "datasets" / "fineweb10B_sp1024"
    assert sorted(p.name for p in folder.iterdir()) == [
        "fineweb_train_000000.bin", "fineweb_train_000001.bin",
        "fineweb_val_000000.bin", "fineweb_val_000001.bin"]
    for name in ("fineweb_val_000000.bin", "fineweb_train_000001.bin"):
        hub = cache / ("datasets--" + REPO_ID.replace("/", "--")) / "snapshots" / COMMIT / "datasets"
        assert (folder / name).read_bytes() == (hub / "datasets" / "fineweb10B_sp1024" / name).read_bytes()
    found = find_data(load_config({"DATA_DIR": str(data), "VOCAB_SIZE": "1024",
                                    "EVAL_SEQ_LEN": "64"}))
    assert [p.name for p in found.train] == ["fineweb_train_000000.bin", "fineweb_train_000001.bin"]
    assert found.tokenizer == data / "tokenizers" / "fineweb_1024_bpe.model"

    # Asking for one more shard fetches only that one; a damaged file in place (here one a copy
    # cut short left) is fetched again.
    first = (folder / "fineweb_train_000000.bin").stat().st_ino
    (folder / "fineweb_val_000001.bin").unlink()
    (folder / "fineweb_val_000001.bin").write_bytes(b"\0" * 100)
    again = fineweb(cache, data, "--train-shards", 3)
    assert again.returncode == 0, again.stderr
    status = [line.rsplit("(", 1)[-1] for line in again.stdout.splitlines()[:6]]
    assert status == ["already there)", "downloaded)", "already there)", "already there)",
                      "downloaded)", "already there)"]
    assert (folder / "fineweb_train_000000.bin").stat().st_ino == first
    assert (folder / "fineweb_val_000001.bin").stat().st_size == 1024 + 2 * VAL[1].size


def test_more_shards_than_published_is_one_line(cache, tmp_path):
    result = fineweb(cache, tmp_path / "data", "--train-shards", 4)
    assert result.returncode == 2
    assert result.stderr.strip() == (f"pgolf: {REPO_ID} publishes 3 training shards of "
                                     "fineweb10B_sp1024; --train-shards 4 asks for more")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("hub, message", [
    (dict(val_tokens=291), "the validation shards hold 290 tokens, the manifest says 291"),
    (dict(tokenizer="../../../outside.model"), "is not a .model file inside the export"),
    (dict(shards={**_shards(), "fineweb_train_000000.bin": np.array([1, 2000, 3])}),
     "token id 2000 is not below the vocabulary size 1024"),
])
def test_a_bad_export_stops_in_one_line(tmp_path, hub, message):
    result = fineweb(hub_cache(tmp_path / "cache", **hub), tmp_path / "data", "--train-shards", 1)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr


def test_a_damaged_file_in_the_cache_is_named_with_the_way_out(cache, tmp_path):
    shard = (cache / ("datasets--" + REPO_ID.replace("/", "--")) / "snapshots" / COMMIT / "datasets"
             / "datasets" / "fineweb10B_sp1024" / "fineweb_val_000000.bin")
    shard.write_bytes(shard.read_bytes()[:-2])
    result = fineweb(cache, tmp_path / "data", "--train-shards", 1)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"{shard.resolve()}: " in result.stderr
    assert result.stderr.strip().endswith("cached copy of datasets/datasets/fineweb10B_sp1024/"
                                          "fineweb_val_000000.bin: delete it and run again to "
                                          "download it afresh")
    assert not (tmp_path / "data" / "datasets" / "fineweb10B_sp1024" / "fineweb_val_000000.bin").exists()


def test_a_file_the_hub_does_not_have_is_one_line(cache, tmp_path):
    shard = (cache / ("datasets--" + REPO_ID.replace("/", "--")) / "snapshots" / COMMIT / "datasets"
             / "datasets" / "fineweb10B_sp1024" / "fineweb_train_000001.bin")
    shard.unlink()
    result = fineweb(cache, tmp_path / "data", "--train-shards", 2)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"{REPO_ID}: cannot get datasets/datasets/fineweb10B_sp1024/fineweb_train_000001.bin (" \
        in result.stderr
    assert not list((tmp_path / "data").rglob(".*tmp*"))  # nothing half-written
