"""The sweep's worker pool: every job gets a result or a reason, and no job holds up the others."""

from __future__ import annotations

from pathlib import Path

from pgolf_cli.sweep import pool
from pooljobs import work


def run(jobs, *, workers=2, timeout_s=600.0, memory_bytes=2**34):
    results = {}
    order = []

    def done(index, result):
        assert index not in results
        results[index] = result
        order.append(index)

    pool.run(jobs, work, workers=workers, timeout_s=timeout_s, memory_bytes=memory_bytes, done=done)
    return results, order


def test_every_job_gets_its_result():
    results, _ = run([("square", n) for n in range(7)], workers=3)
    assert results == {n: n * n for n in range(7)}


def test_a_job_past_the_timeout_is_stopped_and_the_rest_finish():
    results, order = run([("block", None), *[("square", n) for n in range(1, 5)]], timeout_s=10)
    assert results[0] == pool.Failure("timeout", "stopped after 10 s")
    assert {i: results[i] for i in range(1, 5)} == {n: n * n for n in range(1, 5)}
    assert order[-1] == 0  # the others ran on the second worker while it blocked


def test_a_job_over_the_memory_bound_is_stopped():
    results, _ = run([("hog", 600 * 2**20), ("square", 3)], memory_bytes=400 * 2**20)
    assert results[0] == pool.Failure("memory", "stopped at over 400 MiB resident")
    assert results[1] == 9


def test_a_worker_that_dies_or_a_job_that_raises_is_reported_and_replaced():
    results, _ = run([("exit", 3), ("raise", "bad input"), ("square", 4), ("square", 5)], workers=1)
    assert results[0] == pool.Failure("error", "the worker died (exit status 3)")
    assert results[1] == pool.Failure("error", "ValueError: bad input")
    assert (results[2], results[3]) == (16, 25)


def test_a_stopped_job_takes_the_processes_it_started_with_it(tmp_path):
    pid_file = tmp_path / "pid"
    # The job writes the pid once its process runs; on a loaded machine that may take longer than
    # the first timeout, so a longer one follows rather than a test that depends on speed.
    for timeout_s in (5, 120):
        results, _ = run([("child", str(pid_file))], timeout_s=timeout_s)
        assert results[0].kind == "timeout"
        if pid_file.exists():
            break
    pid = int(pid_file.read_text())
    # The pool waited for what it killed: the process is gone or a zombie when run() returns.
    state = Path(f"/proc/{pid}/stat")
    assert not state.exists() or state.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
