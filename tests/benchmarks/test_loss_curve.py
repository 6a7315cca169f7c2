"""benchmarks/loss_curve.py: the equal-curve check that speed changes are judged by."""

import json
import subprocess
import sys

import pytest

from trainer_support import clean_env


def _loss_curve(*args, cwd):
    return subprocess.run([sys.executable, "-m", "benchmarks.loss_curve", *map(str, args)],
                          env=clean_env(), cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_rerun_gives_the_same_curve_and_a_moved_curve_fails(tmp_path):
    for name in ("a.json", "a2.json"):
        done = _loss_curve("run", "--preset", "tiny", "--steps", "3", "--out", tmp_path / name,
                           cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    curve = json.loads((tmp_path / "a.json").read_text())
    assert curve["losses"][0] == pytest.approx(6.93, abs=0.01)  # ln(1024): uniform at the start
    assert curve["losses"][2] < curve["losses"][0]  # the steps trained
    same = _loss_curve("compare", tmp_path / "a.json", tmp_path / "a2.json", cwd=tmp_path)
    assert same.returncode == 0 and "max |difference| 0 over 3 steps: same" in same.stdout

    curve["losses"][1] += 0.01
    (tmp_path / "b.json").write_text(json.dumps(curve))
    moved = _loss_curve("compare", tmp_path / "a.json", tmp_path / "b.json", cwd=tmp_path)
    assert moved.returncode == 1 and "max |difference| 0.01 over 3 steps: DIFFERENT" in moved.stdout

    curve["looping"] = True
    (tmp_path / "c.json").write_text(json.dumps(curve))
    other = _loss_curve("compare", tmp_path / "a.json", tmp_path / "c.json", cwd=tmp_path)
    assert other.returncode == 1 and "differ in preset, seed, looping" in other.stderr
    assert "Traceback" not in other.stderr
