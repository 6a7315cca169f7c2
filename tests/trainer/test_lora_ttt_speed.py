"""benchmarks/lora_ttt_speed.py's count of a validation stream's work (the timed pass is a GPU
run: docs/benchmarks.md)."""

import numpy as np
import pytest
import torch

from benchmarks import lora_ttt_speed
from trainer.shards import BOS_ID, write_shard

SMALL = {"EVAL_SEQ_LEN": "64", "TTT_LORA_CHUNK_TOKENS": "16", "TTT_LORA_BATCH_DOCS": "2",
         "TTT_PHASES": "1", "TTT_PHASE_DOCS": "1"}


def test_the_work_of_a_shard_per_group_as_the_trainer_cuts_it(tmp_path, capsys):
    tokens = np.full(161, 7, dtype=np.uint16)
    tokens[[0, 40, 140]] = BOS_ID  # documents of 40, 100 and 21 tokens
    write_shard(tmp_path / "val.bin", tokens)
    lora_ttt_speed.count_shard(tmp_path / "val.bin", SMALL)
    out = capsys.readouterr().out.splitlines()
    # Cut to 1 + 2 x 64 tokens: positions 0-127, the documents [0, 40) and [40, 128). The first
    # is group 1 alone: chunks at 0, 16, 32, windows 16, 32, 48 wide, two rows (one empty).
    # Group 2: 88 positions, chunks at 0-80, windows 16, 32, 48, 64, 64, 64.
    assert out == ["tokens:129 eval_seq_len:64 chunk:16 batch_docs:2",
                   f"group 1: docs:1 window_tokens:{2 * (16 + 32 + 48)}",
                   f"group 2: docs:1 window_tokens:{2 * (16 + 32 + 48 + 64 * 3)}"]


def test_a_missing_shard_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match=r"^no validation shard at "):
        lora_ttt_speed.count_shard(tmp_path / "val.bin", SMALL)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the message is for machines without one")
def test_the_timed_pass_without_a_gpu_is_one_line():
    with pytest.raises(SystemExit, match=r"^the timed pass needs a CUDA GPU; --val-shard counts"):
        lora_ttt_speed.main(["--compile", "--docs", "4"])
