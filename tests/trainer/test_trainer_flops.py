import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from trainer.config import load_config
from trainer.flops import attention_flops_per_token, matmul_flops_per_token, step_flops
from trainer.model import GPT


@pytest.mark.parametrize("looping", [False, True])
def test_matmul_count_matches_torch_flop_counter(looping):
    cfg = load_config({"PRESET": "tiny"})
    model = GPT(cfg)
    model.looping_active = looping
    x = torch.randint(0, cfg.vocab_size, (2, cfg.train_seq_len))
    with FlopCounterMode(display=False) as counter:
        model(x, x).backward()
    # On CPU the counter sees the matmuls (attention runs in a kernel it does not count).
    assert counter.get_total_flops() == matmul_flops_per_token(cfg, looping) * x.numel()


def test_record_step_is_the_reference_figure():
    """About 3.4e14 FLOPs per step once the loops run (the reference notes' arithmetic)."""
    cfg = load_config({})
    assert step_flops(cfg, looping=True) == pytest.approx(3.35e14, rel=0.01)
    assert step_flops(cfg, looping=False) == pytest.approx(2.24e14, rel=0.01)
    assert attention_flops_per_token(cfg, True, causal=False) == 2 * attention_flops_per_token(cfg, True)
