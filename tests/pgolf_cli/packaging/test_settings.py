"""The settings a run changed, read back from its log's Hyperparameters block."""

from __future__ import annotations

from audits.submission.logparse import parse_log
from pgolf_cli.packaging.settings import changed_settings
from trainer.config import hyperparameter_lines, load_config


def logged(env: dict[str, str]) -> dict[str, str]:
    """The Hyperparameters block a run with `env` prints, as name -> value."""
    lines = hyperparameter_lines(load_config(env))[1:]
    return {name.strip(): value.strip() for name, value in (line.split(":", 1) for line in lines)}


def test_a_default_run_changes_nothing():
    assert changed_settings(logged({"SEED": "7", "RUN_ID": "x", "DATA_DIR": "/somewhere/data"})) == ({}, [])


def test_a_preset_and_its_overrides_are_the_changes():
    changed, unknown = changed_settings(logged({"PRESET": "tiny", "NUM_LAYERS": "7",
                                                "MAX_WALLCLOCK_SECONDS": "60"}))
    assert changed == {"PRESET": "tiny", "MAX_WALLCLOCK_SECONDS": "60.0", "NUM_LAYERS": "7"}
    assert unknown == []


def test_other_data_is_named_under_data_without_the_machines_path():
    changed, _ = changed_settings(logged({"DATA_PATH": "/home/ada/corpus/datasets/mine_sp8192",
                                          "TOKENIZER_PATH": "/home/ada/tok/mine.model"}))
    assert changed == {"DATA_PATH": "./data/datasets/mine_sp8192",
                       "TOKENIZER_PATH": "./data/tokenizers/mine.model"}


def test_settings_of_another_version_are_listed_not_compared():
    hp = {**logged({}), "bigram_buckets": "3072"}
    assert changed_settings(hp) == ({}, ["bigram_buckets"])


def test_the_device_line_is_parsed():
    assert parse_log("seed:1\ndevice: NVIDIA H100 80GB HBM3 x8\n").device.value == "NVIDIA H100 80GB HBM3"
    assert parse_log("device: cpu (x86_64) x1\n").device.value == "cpu (x86_64)"
    assert parse_log("seed:1\n").device is None
