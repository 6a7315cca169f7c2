"""benchmarks/fa4_compiles.py: its bad input and a machine without a GPU, each one line.
The timings themselves are taken on a GPU (docs/benchmarks.md)."""

import pytest
import torch

from benchmarks import fa4_compiles


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the benchmark would run")
def test_without_a_gpu_it_says_what_it_needs():
    with pytest.raises(SystemExit, match=r"^needs a CUDA GPU with FlashAttention 4"):
        fa4_compiles.main([])


def test_bad_widths_are_named(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(SystemExit, match=r"--widths: not comma-separated whole numbers: '48,x'"):
        fa4_compiles.main(["--widths", "48,x"])
