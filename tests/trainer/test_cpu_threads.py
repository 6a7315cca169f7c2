"""CPU runs use one torch thread unless OMP_NUM_THREADS says otherwise, and log which."""

import torch

from trainer.main import set_cpu_threads


def test_one_thread_by_default_and_omp_num_threads_wins(monkeypatch):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        line = set_cpu_threads()
        assert torch.get_num_threads() == 1
        assert line.startswith("cpu_threads:1 (one per process on ") and "OMP_NUM_THREADS=N" in line
        torch.set_num_threads(2)
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        assert set_cpu_threads() == "cpu_threads:2 (OMP_NUM_THREADS)"
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
