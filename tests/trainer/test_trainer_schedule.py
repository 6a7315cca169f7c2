import math

import pytest
import torch

from trainer.config import load_config
from trainer.schedule import EMA, expected_steps, make_schedule, scaled_ema_decay


def test_wallclock_budget_keeps_the_gptq_reserve():
    schedule = make_schedule(load_config({}))
    assert schedule.budget_ms == 588_000
    assert schedule.progress(step=10, elapsed_ms=294_000) == 0.5
    steps = make_schedule(load_config({"MAX_WALLCLOCK_SECONDS": "0", "ITERATIONS": "200"}))
    assert steps.budget_ms is None and steps.progress(step=50, elapsed_ms=1e9) == 0.25


def test_lr_warms_down_linearly_to_the_floor():
    schedule = make_schedule(load_config({"WARMDOWN_FRAC": "0.5", "MIN_LR": "0.1"}))
    assert schedule.lr_scale(0.0) == schedule.lr_scale(0.49) == 1.0
    assert schedule.lr_scale(0.5) == 1.0 and schedule.lr_scale(0.75) == pytest.approx(0.5)
    assert schedule.lr_scale(0.99) == 0.1 and schedule.lr_scale(1.2) == 0.1
    assert make_schedule(load_config({"WARMDOWN_FRAC": "0"})).lr_scale(0.99) == 1.0


def test_momentum_warms_up_and_looping_switches_on():
    schedule = make_schedule(load_config({}))
    assert schedule.muon_momentum(0) == 0.92
    assert schedule.muon_momentum(750) == pytest.approx(0.955)
    assert schedule.muon_momentum(5000) == 0.99
    assert not schedule.looping(0.349) and schedule.looping(0.35)
    assert not make_schedule(load_config({"NUM_LOOPS": "0"})).looping(0.9)


def test_the_training_context_follows_its_schedule():
    schedule = make_schedule(load_config({"TRAIN_SEQ_LEN": "3072",
                                          "TRAIN_SEQ_SCHEDULE": "1024@0.1, 1536@0.7"}))
    assert schedule.seq_plan == ((0.1, 1024), (0.7, 1536), (1.0, 3072))
    assert [schedule.seq_len(p) for p in (0.0, 0.099, 0.1, 0.69, 0.7, 1.0, 1.2)] == \
        [1024, 1024, 1536, 1536, 3072, 3072, 3072]
    assert make_schedule(load_config({})).seq_len(0.0) == 2048


def test_ema_decay_scales_with_the_expected_steps():
    assert scaled_ema_decay(4550) == pytest.approx(0.9965)
    assert scaled_ema_decay(160) == pytest.approx(0.9005, abs=1e-4)
    assert scaled_ema_decay(3) == 0.0
    schedule = make_schedule(load_config({"MAX_WALLCLOCK_SECONDS": "180"}))
    # 168 s: 35% at 700 ms/step, then 65% at 1,100 ms/step.
    assert expected_steps(schedule, 700.0, 1100.0) == pytest.approx(84 + 99.27, abs=0.1)


def test_ema_is_an_exponential_average_of_the_weights():
    model = torch.nn.Linear(3, 2)
    start = model.weight.detach().clone()
    ema = EMA(model, decay=0.9)
    with torch.no_grad():
        model.weight.add_(1.0)
    ema.update(model)
    ema.update(model)
    ema.copy_to(model)
    # two updates towards start + 1: 1 - 0.9^2 of the way
    assert torch.allclose(model.weight, start + (1 - 0.9**2), atol=1e-6)
    assert math.isclose(ema.decay, 0.9)
