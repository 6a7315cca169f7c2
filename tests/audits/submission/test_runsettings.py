"""Code behind a setting that is off by default weighs what it does when the folder's own runs
turned the setting on: its launch script, its README's command, its logs' hyperparameters."""

from legality_fixtures import ROOT
from support import audit_findings, by_rule, write_folder

SLOT = (ROOT / "slot" / "slot_delta_adamw.py").read_text()
_LOOP = """        for _ in range(SLOT_STEPS):
            logits = model.lm_head(h + delta)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()  # expect: SLOT FAIL
"""
# The per-window optimization runs only when SLOT_ENABLED (off by default) is set.
GATED = SLOT.replace(_LOOP, "        if SLOT_ENABLED:\n" + "".join("    " + line + "\n" for line in _LOOP.splitlines())
                     ).replace("SLOT_STEPS = ",
                               "SLOT_ENABLED = bool(int(os.environ.get(\"SLOT_ENABLED\", \"0\")))\nSLOT_STEPS = ")


def _slot(tmp_path, **files):
    return by_rule(audit_findings(write_folder(tmp_path, {"train_gpt.py": GATED, **files}),
                                  only=frozenset({"SLOT"})), "SLOT")


def test_the_gated_fixture_is_gated():
    assert _LOOP in SLOT and "            for _ in range(SLOT_STEPS):" in GATED


def test_off_by_default_is_a_warning(tmp_path):
    f = _slot(tmp_path)
    assert {str(x.severity) for x in f} == {"WARN"}
    assert "only when SLOT_ENABLED is set" in f[0].message


def test_a_launch_script_that_turns_it_on_makes_it_count(tmp_path):
    f = _slot(tmp_path, **{"run.sh": "#!/bin/bash\nSLOT_ENABLED=1 torchrun --nproc_per_node=8 train_gpt.py\n"})
    assert {str(x.severity) for x in f} == {"FAIL"}
    assert "the run turned it on: run.sh:2 (SLOT_ENABLED=1)" in f[0].message


def test_the_readme_command_and_the_logged_hyperparameters_count_too(tmp_path):
    readme = "# Run\n\n```\nexport SLOT_ENABLED=1\npython train_gpt.py\n```\n"
    assert {str(x.severity) for x in _slot(tmp_path / "a", **{"README.md": readme})} == {"FAIL"}
    log = "Hyperparameters:\n  slot_enabled: True\n  seed: 42\nstep:1/10 train_loss:6.9 train_time:100ms\n"
    assert {str(x.severity) for x in _slot(tmp_path / "b", **{"train_seed42.log": log})} == {"FAIL"}


def test_a_log_line_announcing_the_feature_enabled_counts(tmp_path):
    log = "slot_enabled:enabled steps=8 lr=0.01\nstep:1/10 train_loss:6.9 train_time:100ms\n"
    f = _slot(tmp_path / "a", **{"train_seed42.log": log})
    assert {str(x.severity) for x in f} == {"FAIL"}
    assert "train_seed42.log:1 (slot_enabled:enabled" in f[0].message
    other = "other_feature:enabled\nslot_enabled:disabled\n"  # another feature; this one said off
    assert {str(x.severity) for x in _slot(tmp_path / "b", **{"train_seed42.log": other})} == {"WARN"}


def test_a_run_that_leaves_it_off_keeps_the_warning(tmp_path):
    f = _slot(tmp_path, **{"run.sh": "SLOT_ENABLED=0 torchrun train_gpt.py\n"})
    assert {str(x.severity) for x in f} == {"WARN"}


def test_a_setting_the_logs_print_is_as_the_logs_show_it(tmp_path):
    """The logs are the runs: a README command that turns the setting on describes another run."""
    readme = "# Ablation\n\n`SLOT_ENABLED=1 python train_gpt.py` was tried and is not this run.\n"
    log = "Hyperparameters:\n  slot_enabled: False\n  seed: 42\nstep:1/10 train_loss:6.9 train_time:100ms\n"
    f = _slot(tmp_path, **{"README.md": readme, "train_seed42.log": log})
    assert {str(x.severity) for x in f} == {"WARN"}


def test_a_setting_set_to_zero_in_prose_stays_off(tmp_path):
    readme = "# Notes\n\nSLOT is disabled (SLOT_ENABLED=0). Also `SLOT_ENABLED=0`, and SLOT_ENABLED=0.0.\n"
    assert {str(x.severity) for x in _slot(tmp_path, **{"README.md": readme})} == {"WARN"}


# The evaluation reads the validation tokens itself, from an object's field, and runs only when
# the caller's test of SLOT_ENABLED, read through a minifier's alias of os.environ.get, passes.
SELF_READING = SLOT.replace("import os\n", "import os\n\n_E = os.environ.get\n").replace(
    "def eval_val_slot(model, val_tokens, seq_len=1024, stride=512, bsz=16):\n",
    "def eval_val_slot(model, data, seq_len=1024, stride=512, bsz=16):\n    val_tokens = data.val_tokens\n",
).replace(
    "    print(f\"final_slot val_loss:{eval_val_slot(model, load('val')):.6f}\")\n",
    "    run_evals(Settings(), model, Validation())\n",
).replace("\ndef main():", """
class Settings:
    slot_enabled = bool(int(_E("SLOT_ENABLED", "0")))


class Validation:
    def __init__(self):
        self.val_tokens = load("val")


def run_evals(settings, model, data):
    if settings.slot_enabled:
        print(f"final_slot val_loss:{eval_val_slot(model, data):.6f}")


def main():""")


def test_a_function_called_only_behind_the_setting_is_gated_too(tmp_path):
    assert "_E = os.environ.get" in SELF_READING and "run_evals(Settings()" in SELF_READING
    folder = write_folder(tmp_path, {"train_gpt.py": SELF_READING})
    f = by_rule(audit_findings(folder, only=frozenset({"SLOT"})), "SLOT")
    assert {str(x.severity) for x in f} == {"WARN"}
    assert "only when SLOT_ENABLED is set" in f[0].message
    log = "Hyperparameters:\n  slot_enabled: True\nstep:1/10 train_loss:6.9 train_time:100ms\n"
    on = by_rule(audit_findings(write_folder(tmp_path / "on", {"train_gpt.py": SELF_READING,
                                                                "train_seed42.log": log}),
                                only=frozenset({"SLOT"})), "SLOT")
    assert {str(x.severity) for x in on} == {"FAIL"}


def test_a_validation_shard_linked_as_training_data_is_val_in_training(tmp_path):
    readme = ("# Val-only\n\n```bash\nmkdir -p /data/valonly\n"
              "ln -s /data/sp1024/fineweb_val_000000.bin /data/valonly/fineweb_train_000000.bin\n"
              "ln -s /data/sp1024/fineweb_val_000000.bin /data/valonly/fineweb_val_000000.bin\n```\n")
    script = "import torch\n\nif __name__ == '__main__':\n    pass\n"
    f = by_rule(audit_findings(write_folder(tmp_path, {"train_gpt.py": script, "README.md": readme}),
                               only=frozenset({"VAL_DATA_IN_TRAINING"})), "VAL_DATA_IN_TRAINING")
    assert [(str(x.severity), x.file, x.line) for x in f] == [("FAIL", "README.md", 5)]


def test_a_training_files_setting_set_to_validation_shards_is_val_in_training(tmp_path):
    """`TRAIN_FILES=fineweb_val_*.bin` in the run command, where the script reads TRAIN_FILES
    with the training shards as its default; a setting without that default is not one."""
    script = ("import os\n\ndata_path = os.environ.get('DATA_PATH', './data')\n"
              "train_files = os.environ.get('TRAIN_FILES', os.path.join(data_path, 'fineweb_train_*.bin'))\n"
              "val_files = os.environ.get('VAL_FILES', os.path.join(data_path, 'fineweb_val_*.bin'))\n")
    readme = ("# Val-only\n\n```bash\nVAL_FILES=/data/fineweb_val_*.bin \\\n"
              "TRAIN_FILES=/data/fineweb_val_*.bin torchrun --nproc_per_node=8 train_gpt.py\n```\n")
    f = by_rule(audit_findings(write_folder(tmp_path, {"train_gpt.py": script, "README.md": readme}),
                               only=frozenset({"VAL_DATA_IN_TRAINING"})), "VAL_DATA_IN_TRAINING")
    assert [(str(x.severity), x.file, x.line) for x in f] == [("FAIL", "README.md", 5)]


def _slot_under(tmp_path, test: str, default: str):
    """The gated fixture with its test `if SLOT_ENABLED:` replaced by `test` on SLOT_ORDER."""
    source = GATED.replace("        if SLOT_ENABLED:\n", f"        if {test}:\n").replace(
        'SLOT_ENABLED = bool(int(os.environ.get("SLOT_ENABLED", "0")))',
        f'SLOT_ORDER = int(os.environ.get("SLOT_ORDER", {default}))')
    assert f"if {test}:" in source and "SLOT_ORDER = int(" in source
    return by_rule(audit_findings(write_folder(tmp_path, {"train_gpt.py": source}),
                                  only=frozenset({"SLOT"})), "SLOT")


def test_a_setting_compared_with_another_bound_is_read_at_its_default(tmp_path):
    """`if order >= 2:` on a setting that is 0 by default runs only with the setting changed;
    `if order < 2:` runs by default; a default other than 0 is not known, so it counts."""
    f = _slot_under(tmp_path / "a", "SLOT_ORDER >= 2", "0")
    assert {str(x.severity) for x in f} == {"WARN"}
    assert "only when SLOT_ORDER is set" in f[0].message
    assert {str(x.severity) for x in _slot_under(tmp_path / "b", "SLOT_ORDER == 3", "0")} == {"WARN"}
    assert {str(x.severity) for x in _slot_under(tmp_path / "c", "SLOT_ORDER < 2", "0")} == {"FAIL"}
    assert {str(x.severity) for x in _slot_under(tmp_path / "d", "SLOT_ORDER >= 2", "3")} == {"FAIL"}


def _slot_mode(tmp_path, test: str, default: str, **files):
    """GATED with its test `if {test}:` on SLOT_MODE, a setting whose default is a word."""
    source = GATED.replace("        if SLOT_ENABLED:\n", f"        if {test}:\n").replace(
        'SLOT_ENABLED = bool(int(os.environ.get("SLOT_ENABLED", "0")))',
        f'SLOT_MODE = os.environ.get("SLOT_MODE", "{default}")')
    assert f"if {test}:" in source and "SLOT_MODE = os.environ" in source
    return by_rule(audit_findings(write_folder(tmp_path, {"train_gpt.py": source, **files}),
                                  only=frozenset({"SLOT"})), "SLOT")


def test_a_setting_compared_with_a_word_runs_where_its_default_is_that_word(tmp_path):
    f = _slot_mode(tmp_path / "a", 'SLOT_MODE == "delta"', "plain")
    assert {str(x.severity) for x in f} == {"WARN"}
    assert "only when SLOT_MODE=delta is set" in f[0].message
    assert {str(x.severity) for x in _slot_mode(tmp_path / "b", 'SLOT_MODE == "delta"', "delta")} == {"FAIL"}
    assert {str(x.severity) for x in _slot_mode(tmp_path / "c", 'SLOT_MODE != "delta"', "plain")} == {"FAIL"}
    assert {str(x.severity) for x in _slot_mode(tmp_path / "d", 'SLOT_MODE != "delta"', "delta")} == {"WARN"}


def test_a_run_that_sets_the_word_makes_it_count(tmp_path):
    run = {"run.sh": "SLOT_MODE=delta torchrun --nproc_per_node=8 train_gpt.py\n"}
    f = _slot_mode(tmp_path / "a", 'SLOT_MODE == "delta"', "plain", **run)
    assert {str(x.severity) for x in f} == {"FAIL"}
    assert "the run turned it on: run.sh:1 (SLOT_MODE=delta)" in f[0].message
    log = {"train_seed42.log": "Hyperparameters:\n  slot_mode: delta\n  seed: 42\n" + _STEP}
    assert {str(x.severity) for x in _slot_mode(tmp_path / "b", 'SLOT_MODE == "delta"', "plain", **log)} == {"FAIL"}
    other = {"run.sh": "SLOT_MODE=sparse torchrun train_gpt.py\n"}  # another word: still not run
    assert {str(x.severity) for x in _slot_mode(tmp_path / "c", 'SLOT_MODE == "delta"', "plain", **other)} == {"WARN"}


def test_a_string_compared_with_one_or_zero_is_the_setting_on_or_off(tmp_path):
    inline = 'os.environ.get("SLOT_ON", "0") == "1"'
    f = _slot_mode(tmp_path / "a", inline, "plain")
    assert {str(x.severity) for x in f} == {"WARN"}
    assert "only when SLOT_ON is set" in f[0].message
    run = {"run.sh": "SLOT_ON=1 torchrun train_gpt.py\n"}
    assert {str(x.severity) for x in _slot_mode(tmp_path / "b", inline, "plain", **run)} == {"FAIL"}
    off_default_on = 'os.environ.get("SLOT_ON", "1") != "0"'
    assert {str(x.severity) for x in _slot_mode(tmp_path / "c", off_default_on, "plain")} == {"FAIL"}
    # a default that is another word: "1" is then one of its words, not the setting on
    assert {str(x.severity) for x in _slot_mode(tmp_path / "d", 'SLOT_MODE == "1"', "auto")} == {"WARN"}
    run = {"run.sh": "SLOT_MODE=1 torchrun train_gpt.py\n"}
    assert {str(x.severity) for x in _slot_mode(tmp_path / "e", 'SLOT_MODE == "1"', "auto", **run)} == {"FAIL"}


# The gated loop announces itself: a line that only the code behind `if SLOT_ENABLED:` prints.
_ANNOUNCE = '            print(f"slot: optimizing a delta, steps={SLOT_STEPS} lr={SLOT_LR}")\n'
ANNOUNCED = GATED.replace("        if SLOT_ENABLED:\n", "        if SLOT_ENABLED:\n" + _ANNOUNCE)
_STEP = "step:1/10 train_loss:6.9 train_time:100ms\n"


def test_a_log_line_only_the_gated_code_prints_turns_the_setting_on(tmp_path):
    assert _ANNOUNCE in ANNOUNCED
    log = _STEP + "slot: optimizing a delta, steps=8 lr=0.005\nfinal_slot val_loss:2.1\n"
    f = _slot(tmp_path, **{"train_gpt.py": ANNOUNCED, "train_seed42.log": log})
    assert {str(x.severity) for x in f} == {"FAIL"}
    assert ("the run turned it on: train_seed42.log:2 (slot: optimizing a delta, steps=8 lr=0.005)"
            in f[0].message)


def test_a_line_also_printed_outside_the_test_or_quoted_from_source_proves_nothing(tmp_path):
    both = ANNOUNCED.replace("def main():\n", "def main():\n" + _ANNOUNCE[8:])
    assert both.count(_ANNOUNCE.strip()) == 2
    log = _STEP + "slot: optimizing a delta, steps=8 lr=0.005\n"
    f = _slot(tmp_path / "a", **{"train_gpt.py": both, "train_seed42.log": log})
    assert {str(x.severity) for x in f} == {"WARN"}
    quoted = _STEP + _ANNOUNCE + 'print("slot: optimizing a delta, steps=")\n'  # the script's text in its log
    f = _slot(tmp_path / "b", **{"train_gpt.py": ANNOUNCED, "train_seed42.log": quoted})
    assert {str(x.severity) for x in f} == {"WARN"}


def test_a_line_printed_in_a_function_reached_only_behind_the_setting_counts(tmp_path):
    """The print has no test of its own: every path to its function passes `if slot_enabled:`,
    and it goes through the script's own logger (`log0(msg)`)."""
    source = SELF_READING.replace(
        "    val_tokens = data.val_tokens\n",
        "    val_tokens = data.val_tokens\n"
        "    log0('slot_eval: windows of %d tokens, stride %d' % (seq_len, stride))\n",
    ).replace("\nclass Settings:", "\ndef log0(msg):\n    print(msg, flush=True)\n\n\nclass Settings:")
    assert "log0('slot_eval" in source and "def log0(msg)" in source
    log = _STEP + "slot_eval: windows of 1024 tokens, stride 512\n"
    f = _slot(tmp_path, **{"train_gpt.py": source, "train_seed42.log": log})
    assert {str(x.severity) for x in f} == {"FAIL"}
    assert "train_seed42.log:2 (slot_eval: windows of 1024 tokens, stride 512)" in f[0].message


def test_a_test_of_one_field_needs_that_setting_alone(tmp_path):
    """`if settings.log_every > 0:` on an object made here that also holds SLOT_ENABLED needs
    LOG_EVERY only (the object's value holds every setting it was made from), so the line it
    prints says nothing of SLOT_ENABLED."""
    source = SELF_READING.replace(
        '    slot_enabled = bool(int(_E("SLOT_ENABLED", "0")))\n',
        '    def __init__(self):\n        self.slot_enabled = bool(int(_E("SLOT_ENABLED", "0")))\n'
        '        self.log_every = int(_E("LOG_EVERY", "0"))\n',
    ).replace("def run_evals(settings, model, data):\n",
              "def run_evals(_, model, data):\n    settings = Settings()\n    if settings.log_every > 0:\n"
              "        print(f\"evaluation starts, logging every {settings.log_every} windows\")\n")
    assert "if settings.log_every > 0:" in source and 'self.log_every = int(_E("LOG_EVERY"' in source
    log = _STEP + "evaluation starts, logging every 50 windows\n"
    f = _slot(tmp_path, **{"train_gpt.py": source, "train_seed42.log": log})
    assert {str(x.severity) for x in f} == {"WARN"}
    assert "only when SLOT_ENABLED is set;" in f[0].message
