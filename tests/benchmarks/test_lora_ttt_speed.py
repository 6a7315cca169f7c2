"""benchmarks/lora_ttt_speed.py's count of a stream's work (the timed pass is a GPU run:
docs/benchmarks.md)."""

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
    lora_ttt_speed.main(["--val-shard", str(tmp_path / "val.bin"), "--count-only",
                         *(f"--set={k}={v}" for k, v in SMALL.items())])
    out = capsys.readouterr().out.splitlines()
    # Cut to 1 + 2 x 64 tokens: positions 0-127, the documents [0, 40) and [40, 128). The first
    # is group 1 alone: chunks at 0, 16, 32, windows of 16, 32, 48 tokens, each padded to 64
    # (WIDTH_STEP's multiple, at most EVAL_SEQ_LEN), two rows (one empty). Group 2: 88
    # positions, chunks at 0-80, six windows.
    assert out == ["tokens:129 eval_seq_len:64 chunk:16 batch_docs:2",
                   f"group 1: docs:1 window_tokens:{2 * 3 * 64}",
                   f"group 2: docs:1 window_tokens:{2 * 6 * 64}",
                   f"window_tokens:{2 * 9 * 64:,} (rows x padded width summed over the adapter steps)"]


def test_a_missing_shard_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match=r"^no validation shard at "):
        lora_ttt_speed.main(["--val-shard", str(tmp_path / "val.bin"), "--count-only"])


def _counted(capsys, argv):
    lora_ttt_speed.main(["--docs", "40", "--count-only", *argv])
    lines = capsys.readouterr().out.splitlines()
    stream, work = lines[0], lines[-1]
    assert stream.startswith("docs:40 tokens:")
    return int(work.split()[0].removeprefix("window_tokens:").replace(",", ""))


def test_the_synthetic_streams_work_counted_on_the_cpu(capsys):
    # One document to a batch: no rows of other documents, each document's windows alone:
    # chunks of 48 tokens, each window its document's tokens up to the chunk's end, at most
    # 2,560, padded to a multiple of 128.
    _, lengths = lora_ttt_speed.synthetic_stream(40)
    alone = sum(min(2560, -(-(c + 48) // 128) * 128) for n in lengths.tolist() for c in range(0, n, 48))
    assert _counted(capsys, ["--set", "TTT_LORA_BATCH_DOCS=1"]) == alone
    assert _counted(capsys, ["--set", "TTT_LORA_BATCH_DOCS=8"]) > alone  # rows padded to the longest


@pytest.mark.parametrize("argv, message", [
    (["--set", "NO_SUCH_SETTING=1", "--count-only"], r"NO_SUCH_SETTING"),
    (["--set", "BATCH"], r"^--set takes NAME=VALUE, got 'BATCH'$"),
])
def test_bad_settings_are_one_line(argv, message):
    with pytest.raises(SystemExit, match=message):
        lora_ttt_speed.main(argv)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the message is for machines without one")
def test_the_timed_pass_without_a_gpu_is_one_line(capsys):
    with pytest.raises(SystemExit, match=r"^the timed pass needs a CUDA GPU; --count-only counts"):
        lora_ttt_speed.main(["--compile", "--docs", "4"])
    assert capsys.readouterr().out.startswith("docs:4 ")  # the work, counted before it stops
