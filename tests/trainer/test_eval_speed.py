"""benchmarks/eval_speed.py compare: the per-token check that an evaluation speed-up changed no
score."""

import json
import subprocess
import sys

import numpy as np

from trainer_support import REPO, clean_env

SCRIPT = REPO / "benchmarks" / "eval_speed.py"


def _write_run(folder, seconds, nll):
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"seconds": seconds}))
    for name in ("quantized_sliding_window", "quantized_ttt"):
        np.save(folder / f"nll_{name}.npy", nll)


def _compare(a, b):
    return subprocess.run([sys.executable, str(SCRIPT), "compare", str(a), str(b)], env=clean_env(),
                          capture_output=True, text=True, timeout=120)


def test_compare_reports_the_speedup_and_fails_on_a_moved_loss(tmp_path):
    nll = np.random.default_rng(0).uniform(1.0, 5.0, 100)
    nll[-3:] = np.nan  # positions a traced prefix never scored
    _write_run(tmp_path / "old", {"sliding": 30.0, "ttt_warmup": 40.0, "ttt": 50.0}, nll)
    _write_run(tmp_path / "same", {"sliding": 20.0, "ttt_warmup": 20.0, "ttt": 40.0}, nll.copy())
    moved = nll.copy()
    moved[5] += 0.01
    _write_run(tmp_path / "moved", {"sliding": 20.0, "ttt_warmup": 20.0, "ttt": 40.0}, moved)

    same = _compare(tmp_path / "old", tmp_path / "same")
    assert same.returncode == 0, same.stderr
    assert "120.0 s -> 80.0 s, 1.50x" in same.stdout
    assert "97 positions, 0 differ" in same.stdout

    different = _compare(tmp_path / "old", tmp_path / "moved")
    assert different.returncode == 1 and "97 positions, 1 differ, max |diff| 0.01" in different.stdout


def test_compare_refuses_a_folder_it_did_not_write(tmp_path):
    (tmp_path / "empty").mkdir()
    done = _compare(tmp_path / "empty", tmp_path / "empty")
    assert done.returncode == 1 and "is not a folder written by `eval_speed.py run`" in done.stderr
    assert "Traceback" not in done.stderr
