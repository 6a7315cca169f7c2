"""`pgolf doctor`: one table, and exit 1 when the record path cannot run here."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

from pgolf_cli.main import cli
from trainer_support import make_data_dir


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data_dir(tmp_path_factory.mktemp("data"), max_docs=40)


def doctor(*args):
    return CliRunner().invoke(cli, ["doctor", *args], catch_exceptions=False)


def rows(output: str) -> dict[str, tuple[str, str]]:
    table = {}
    for line in output.splitlines()[:-1]:
        name, status, detail = [part.strip() for part in line.split("  ") if part.strip()][:3]
        table[name] = (status, detail)
    return table


def test_the_data_rows_check_the_shards_and_the_tokenizer(data_dir):
    result = doctor("--data-dir", str(data_dir), "--vocab-size", "1024")
    table = rows(result.output)
    assert table["torch"] == ("ok", torch.__version__)
    assert table["data shards"][0] == "ok" and "1 train, 1 val shards checked" in table["data shards"][1]
    assert table["tokenizer"][0] == "ok" and "1024 pieces (VOCAB_SIZE=1024)" in table["tokenizer"][1]
    assert {"FlashAttention 3", "FlashAttention 4", "quack GEMM", "smoke sandbox",
            "smoke Python 3.10"} <= set(table)
    if not torch.cuda.is_available():  # the record path needs a GPU
        assert table["CUDA GPU"][0] == "NO" and "bf16 matmul" not in table
        assert result.exit_code == 1
        assert result.output.splitlines()[-1] == "the record path cannot run here: CUDA GPU"


def test_missing_data_or_a_wrong_vocabulary_is_a_no(data_dir, tmp_path):
    result = doctor("--data-dir", str(tmp_path / "nowhere"))
    table = rows(result.output)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert table["data shards"][0] == "NO" and "does not exist" in table["data shards"][1]
    assert table["tokenizer"][0] == "NO"
    wrong = rows(doctor("--data-dir", str(data_dir), "--vocab-size", "2048").output)
    assert wrong["tokenizer"] == ("NO", f"{data_dir}/tokenizers/fineweb_2048_bpe.model does not exist")
