"""benchmarks/eval_speed.py compare: the per-token check that an evaluation speed-up changed no
score."""

import json
import subprocess
import sys

import numpy as np

from trainer_support import clean_env

PHASES = ("quantized_sliding_window", "quantized_ttt")


def _write_run(folder, seconds, nll, repeat=None):
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"seconds": seconds}))
    for name in PHASES:
        np.save(folder / f"nll_{name}.npy", nll)
        if repeat is not None:
            np.save(folder / f"nll_{name}_repeat.npy", repeat)


def _compare(a, b):
    return subprocess.run([sys.executable, "-m", "benchmarks.eval_speed", "compare", str(a), str(b)],
                          env=clean_env(), capture_output=True, text=True, timeout=120)


def _losses(seed=0):
    nll = np.random.default_rng(seed).uniform(1.0, 5.0, 100)
    nll[-3:] = np.nan  # positions a traced prefix never scored
    return nll


def test_compare_reports_the_speedup_and_fails_on_a_moved_loss(tmp_path):
    nll = _losses()
    _write_run(tmp_path / "old", {"sliding": 30.0, "ttt_warmup": 40.0, "ttt": 50.0}, nll)
    _write_run(tmp_path / "same", {"sliding": 20.0, "ttt_warmup": 20.0, "ttt": 40.0}, nll.copy())
    moved = nll.copy()
    moved[5] += 0.01
    _write_run(tmp_path / "moved", {"sliding": 20.0, "ttt_warmup": 20.0, "ttt": 40.0}, moved)

    same = _compare(tmp_path / "old", tmp_path / "same")
    assert same.returncode == 0, same.stderr
    assert "120.0 s -> 80.0 s, 1.50x" in same.stdout
    assert "mean loss over 97 positions" in same.stdout
    assert "old vs new: 0 differ" in same.stdout

    different = _compare(tmp_path / "old", tmp_path / "moved")
    assert different.returncode == 1 and "old vs new: 1 differ, max |diff| 0.01" in different.stdout


def test_a_phase_its_repeat_does_not_reproduce_is_judged_by_its_mean(tmp_path):
    """Per-token noise as large as a rerun's passes; a shifted mean fails."""
    old, rerun = _losses(0), _losses(1)
    noisy = old + np.random.default_rng(2).normal(0.0, 0.05, old.shape)
    noisy += old[:-3].mean() - noisy[:-3].mean()  # same mean as the old run
    _write_run(tmp_path / "old", {"ttt": 50.0}, old)
    _write_run(tmp_path / "noisy", {"ttt": 40.0}, noisy, repeat=rerun)
    _write_run(tmp_path / "shifted", {"ttt": 40.0}, noisy + 0.01, repeat=rerun)

    noise = _compare(tmp_path / "old", tmp_path / "noisy")
    assert noise.returncode == 0, noise.stdout
    assert "new vs new repeat: 97 differ" in noise.stdout

    shifted = _compare(tmp_path / "old", tmp_path / "shifted")
    assert shifted.returncode == 1, shifted.stdout


def test_compare_refuses_a_folder_it_did_not_write(tmp_path):
    (tmp_path / "empty").mkdir()
    done = _compare(tmp_path / "empty", tmp_path / "empty")
    assert done.returncode == 1 and "is not a folder written by `eval_speed.py run`" in done.stderr
    assert "Traceback" not in done.stderr
