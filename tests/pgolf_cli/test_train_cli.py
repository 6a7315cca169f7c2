"""`pgolf train` input checks, in process (the full run is in tests/trainer/test_trainer_runs.py)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pgolf_cli.main import cli
from pgolf_cli.train_cmd import closing_summary
from runfolders import run_log
from trainer.config import PRESETS, env_name, fields, format_value
from trainer_support import SETTING_NAMES, make_data_dir


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data_dir(tmp_path_factory.mktemp("data"), max_docs=60)


def run(*args, env=None):
    env = {**{name: None for name in SETTING_NAMES}, **(env or {})}  # no stray settings
    return CliRunner().invoke(cli, ["train", *args], env=env, catch_exceptions=False)


def test_list_settings_names_every_setting():
    result = run("--list-settings")
    assert result.exit_code == 0
    for f in fields():
        assert f"\n{env_name(f.name)}=" in "\n" + result.output
        assert f.metadata["doc"][:40] in result.output


def test_list_settings_shows_the_values_of_the_preset_given():
    def listed(*args):
        result = run("--list-settings", *args)
        assert result.exit_code == 0
        return result.output, dict(line.split("=", 1) for line in result.output.splitlines()
                                   if line[:1].isupper())
    default = {env_name(f.name): format_value(f.default) for f in fields()}
    _, record = listed()
    text, tiny = listed("--preset", "tiny", "--set", "SEED=7")
    assert text.startswith("# the tiny preset")
    for name, value in PRESETS["tiny"].items():
        shown = tiny[env_name(name)]
        assert shown.startswith(format_value(value))
        if format_value(value) != default[env_name(name)]:
            assert shown.endswith(f"  [default {default[env_name(name)]}]")
            assert record[env_name(name)].startswith(default[env_name(name)])
    assert tiny["SEED"] == "7  [default 1337]"


def test_a_run_ends_with_its_figures_and_the_next_command(tmp_path):
    (tmp_path / "train.log").write_text(run_log(42, steps=4550, model_bytes=15_861_000), encoding="utf-8")
    summary = closing_summary(tmp_path)
    assert f"run folder: {tmp_path}\n  training: 4550 steps in 592.1 s\n" in summary
    for phase, seconds in (("quantized", 7.5), ("quantized_sliding_window", 84.0), ("quantized_ttt", 366.5)):
        assert f"  {phase}: val_bpb " in summary and f"({seconds:.1f} s)" in summary
    assert "  artifact: 15," in summary and " bytes" in summary
    assert summary.splitlines()[-1].startswith(f"next: pgolf package {tmp_path} ")


@pytest.mark.parametrize("args, message", [
    (["--set", "MATRX_LR=1"], "pgolf: unknown setting MATRX_LR (did you mean MATRIX_LR"),
    (["--set", "NUM_LAYERS=many"], "pgolf: NUM_LAYERS='many': expected an integer"),
    (["--set", "TRAIN_BATCH_TOKENS=1000"], "pgolf: TRAIN_BATCH_TOKENS=1000 must be a multiple of 8"),
    (["--set", "VOCAB_SIZE=2048", "--set", "TOKENIZER_PATH={data}/tokenizers/fineweb_1024_bpe.model",
      "--set", "DATA_PATH={data}/datasets/fineweb10B_sp1024"], "has 1024 pieces but VOCAB_SIZE=2048"),
    (["--nproc", "3"], "pgolf: --nproc 3 must divide 8"),
    (["--data-dir", "{data}/nowhere"], "nowhere/datasets/fineweb10B_sp1024 does not exist"),
])
def test_bad_input_stops_before_anything_runs(data_dir, tmp_path, args, message):
    args = [a.replace("{data}", str(data_dir)) for a in args]
    result = run("--preset", "tiny", "--data-dir", str(data_dir), *args, "--out", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert message in result.output and result.output.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_an_existing_run_folder_is_not_overwritten(data_dir, tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "train.log").write_text("earlier run\n")
    result = run("--preset", "tiny", "--data-dir", str(data_dir), "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and "already holds a run" in result.output


def test_set_needs_name_and_value(data_dir):
    result = run("--preset", "tiny", "--data-dir", str(data_dir), "--set", "SEED")
    assert result.exit_code == 2 and "is not NAME=VALUE" in result.output


@pytest.mark.slow
def test_with_gpus_the_run_folder_gets_the_record_bundle(data_dir, tmp_path, monkeypatch):
    """Where GPUs are seen, `pgolf train` writes the record bundle of the run's settings (the
    run itself here is on the CPU: one process, two steps, no export)."""
    import io

    import rich.console
    from rich.console import Console as RealConsole

    from pgolf_cli import run_progress, train_cmd
    from trainer.bundle import build_bundle
    from trainer.config import load_config, record_settings

    monkeypatch.setattr(train_cmd, "_gpu_count", lambda: 1)  # the hardware is the boundary
    # A terminal, written to a buffer; what the progress display is fed is recorded.
    screen = io.StringIO()
    monkeypatch.setattr(rich.console, "Console",
                        lambda: RealConsole(file=screen, force_terminal=True, width=200))
    fed = []

    class Recorded(run_progress.RunProgress):
        def feed(self, line):
            fed.append(line)
            super().feed(line)

    monkeypatch.setattr(run_progress, "RunProgress", Recorded)
    settings = {"PRESET": "tiny", "ITERATIONS": "2", "WARMUP_STEPS": "0", "PREQUANT_ONLY": "1"}
    result = run("--data-dir", str(data_dir), *[a for k, v in settings.items() for a in ("--set", f"{k}={v}")],
                 "--out", str(tmp_path / "r"), env={"OMP_NUM_THREADS": "1"})
    assert result.exit_code == 0, result.output
    shipped = (tmp_path / "r" / "train_gpt.py").read_text()
    expected = build_bundle(settings=record_settings(load_config({**settings, "DATA_DIR": str(data_dir)})))
    assert shipped == expected and "\nPINNED:dict[str,Any]={'" in shipped
    assert "def start_progress" not in shipped and "def start_progress" in build_bundle()
    # Its own display left out, the run's progress is drawn by `pgolf train` from its lines,
    # which still reach the terminal.
    steps = [line for line in fed if line.startswith("step:2/2 train_loss:")]
    assert steps and steps[0] in screen.getvalue()


@pytest.mark.parametrize("settings, holds", [
    ([], set()),
    (["--set", "SMEAR_GATE_ENABLED=1"], {"SmearGate"}),
    (["--set", "LQER_ENABLED=1", "--set", "SPARSE_ATTN_GATE_ENABLED=1"], {"HeadGate", "fold_corrections"}),
])
def test_with_gpus_the_bundle_holds_what_the_settings_switch_on(data_dir, tmp_path, monkeypatch,
                                                                settings, holds):
    """The launch and the hardware are the boundary: the run folder's train_gpt.py is what would
    run, the record bundle of these settings."""
    import pgolf_cli.train_cmd
    launched = []

    class Launch:  # the run that would start: recorded, its (empty) log written, finished at once
        stdout = None

        def __init__(self, cmd, env, **kwargs):
            launched.append(cmd)
            (Path(env["OUT_DIR"]) / "train.log").write_text("")

        def wait(self):
            return 0

    monkeypatch.setattr(pgolf_cli.train_cmd, "_gpu_count", lambda: 1)
    monkeypatch.setattr(pgolf_cli.train_cmd.subprocess, "Popen", Launch)
    result = run("--preset", "tiny", "--data-dir", str(data_dir), *settings, "--nproc", "1",
                 "--out", str(tmp_path / "r"))
    assert result.exit_code == 0, result.output
    script = (tmp_path / "r" / "train_gpt.py").read_text()
    assert launched and launched[0][-1] == str(tmp_path / "r" / "train_gpt.py")
    for name in ("SmearGate", "HeadGate", "fold_corrections"):
        assert (f"\ndef {name}(" in script or f"\nclass {name}(" in script) == (name in holds), name


@pytest.mark.slow
def test_ctrl_c_stops_a_run_with_status_130_and_the_log_says_so(data_dir, tmp_path):
    """Ctrl-C as a terminal sends it: SIGINT to the whole foreground group, once a step ran."""
    out = tmp_path / "r"
    env = {k: v for k, v in os.environ.items() if k not in SETTING_NAMES}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgolf_cli", "train", "--preset", "tiny", "--data-dir", str(data_dir),
         "--out", str(out), "--set", "ITERATIONS=100000", "--no-bundle"],
        env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
        # a shell's background job starts with SIGINT ignored, and a child inherits that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stdout:  # wait for training to be under way
        if line.startswith("step:"):
            break
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=600)  # a guard against a run that ignores Ctrl-C
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 130
    assert "pgolf: training interrupted" in err and "Traceback" not in err
    assert "stopped: interrupted (Ctrl-C)" in (out / "train.log").read_text(encoding="utf-8")
