"""benchmarks/record_script.py: a record's script run as it is, its settings and its figures.

The script here is a stand-in that reports what it was given and prints the lines a record's log
has; the real runs are on a GPU (docs/benchmarks.md)."""

import importlib.util
import json
import textwrap

import pytest

from benchmarks import record_script

LOG = """\
  val_files: /data/fineweb_val_*.bin
stopping_early: wallclock_cap train_time: 172031ms step: 251/20000
4945/20000 val_loss: 2.3367 val_bpb: 1.0756
diagnostic pre-quantization post-ema val_loss:2.32848665 val_bpb:1.06395844 eval_time:6718ms
Total submission size quantized+brotli: 16012345 bytes
Total submission size quantized+brotli: 15897259 bytes
diagnostic quantized val_loss:2.34727563 val_bpb:1.07254371 eval_time:49995ms
quantized_ttt_phased val_loss:2.31944212 val_bpb:1.05989454 eval_time:508785ms
total_eval_time:508.8s
"""


def test_log_figures_reads_stop_scores_and_the_last_size():
    figures = record_script.log_figures(LOG)
    assert figures["steps"] == 251 and figures["train_seconds"] == 172.031
    # The per-step line ("val_bpb: 1.0756", with a space) is training's, not a phase's score.
    assert figures["scores"] == {
        "diagnostic pre-quantization post-ema": {"val_bpb": 1.06395844, "eval_seconds": 6.718},
        "diagnostic quantized": {"val_bpb": 1.07254371, "eval_seconds": 49.995},
        "quantized_ttt_phased": {"val_bpb": 1.05989454, "eval_seconds": 508.785},
    }
    assert figures["total_eval_seconds"] == 508.8 and figures["total_bytes"] == 15897259


def test_log_figures_of_a_run_that_stopped_early_are_empty():
    figures = record_script.log_figures("train_shards: 1\nTraceback (most recent call last):\n")
    assert figures == {"steps": None, "train_seconds": None, "scores": {},
                       "total_eval_seconds": None, "total_bytes": None}


STAND_IN = textwrap.dedent("""\
    import json, os, sys
    import flash_attn_interface
    names = ("DATA_PATH", "TOKENIZER_PATH", "MAX_WALLCLOCK_SECONDS", "SEED", "MATRIX_LR",
             "TTT_LORA_RANK", "TTT_EVAL_ONLY")
    saved = "final_model.int6.ptz"
    with open("given.json", "w") as f:
        json.dump({"shim": flash_attn_interface.__file__, "cwd": os.getcwd(),
                   "artifact": open(saved).read() if os.path.exists(saved) else None,
                   **{n: os.environ.get(n) for n in names}}, f)
    sys.stdout.write(LOG)
    sys.exit(int(os.environ.get("EXIT", "0")))
""")


def _setup(tmp_path):
    script = tmp_path / "train_gpt.py"
    script.write_text(f"LOG = {LOG!r}\n" + STAND_IN)
    data, tokenizer = tmp_path / "data", tmp_path / "tok.model"
    data.mkdir()
    tokenizer.write_bytes(b"model")
    env_file = tmp_path / "record.env"
    env_file.write_text("# the record's settings\n\nMATRIX_LR=0.026\nTTT_LORA_RANK=80\n")
    return ["--data", str(data), "--tokenizer", str(tokenizer), "--env-file", str(env_file)]


@pytest.mark.skipif(importlib.util.find_spec("flash_attn_interface") is not None,
                    reason="FlashAttention 3 is installed: the script imports it, not the shim")
def test_the_script_runs_in_work_with_settings_and_the_fa3_shim(tmp_path, capsys):
    args = _setup(tmp_path)
    work = tmp_path / "work"
    record_script.main([str(tmp_path / "train_gpt.py"), *args, "--work", str(work),
                        "--seconds", "180", "--set", "TTT_LORA_RANK=96"])
    given = json.loads((work / "given.json").read_text())
    assert given["shim"] == str(record_script.SHIM / "flash_attn_interface.py")
    assert given["cwd"] == str(work)
    assert given["DATA_PATH"] == str((tmp_path / "data").resolve())
    assert given["TOKENIZER_PATH"] == str((tmp_path / "tok.model").resolve())
    assert (given["MAX_WALLCLOCK_SECONDS"], given["SEED"]) == ("180", "42")
    assert (given["MATRIX_LR"], given["TTT_LORA_RANK"]) == ("0.026", "96")  # --set after the file
    assert given["TTT_EVAL_ONLY"] is None and given["artifact"] is None
    summary = json.loads((work / "record_script.json").read_text())
    assert summary["exit_code"] == 0 and summary["steps"] == 251
    assert summary["scores"]["quantized_ttt_phased"]["val_bpb"] == 1.05989454
    out = capsys.readouterr().out
    assert "251 steps in 172.031 s; 15897259 bytes" in out
    assert "quantized_ttt_phased: val_bpb 1.05989 in 508.8 s" in out


@pytest.mark.skipif(importlib.util.find_spec("flash_attn_interface") is not None,
                    reason="FlashAttention 3 is installed: the script imports it, not the shim")
def test_an_artifact_runs_the_scripts_ttt_alone_on_it(tmp_path, capsys):
    args = _setup(tmp_path)
    saved = tmp_path / "earlier" / "final_model.int6.ptz"
    saved.parent.mkdir()
    saved.write_text("the earlier run's quantized model")
    work = tmp_path / "work"
    record_script.main([str(tmp_path / "train_gpt.py"), *args, "--work", str(work),
                        "--artifact", str(saved)])
    given = json.loads((work / "given.json").read_text())
    assert given["TTT_EVAL_ONLY"] == "1"
    assert given["artifact"] == "the earlier run's quantized model"  # where the script loads it
    assert f"TTT alone on {saved}; eval 508.8 s" in capsys.readouterr().out


def test_a_failed_script_is_reported_with_its_figures_kept(tmp_path):
    args = _setup(tmp_path)
    work = tmp_path / "work"
    with pytest.raises(SystemExit, match=r"the script exited 3; see .*script\.log"):
        record_script.main([str(tmp_path / "train_gpt.py"), *args, "--work", str(work),
                            "--set", "EXIT=3"])
    assert json.loads((work / "record_script.json").read_text())["exit_code"] == 3


@pytest.mark.parametrize("problem, message", [
    ("env", r"record\.env:2: not NAME=VALUE: 'MATRIX_LR 0\.026'"),
    ("set", r"--set: not NAME=VALUE: 'SEED'"),
    ("work", r"is not empty; give a new folder"),
    ("script", r"no script at "),
    ("artifact", r"no artifact at .*missing\.ptz"),
])
def test_bad_input_stops_with_one_line_before_running(tmp_path, problem, message):
    args = _setup(tmp_path)
    script, work = tmp_path / "train_gpt.py", tmp_path / "work"
    extra = []
    if problem == "env":
        (tmp_path / "record.env").write_text("# settings\nMATRIX_LR 0.026\n")
    elif problem == "set":
        extra = ["--set", "SEED"]
    elif problem == "artifact":
        extra = ["--artifact", str(tmp_path / "missing.ptz")]
    elif problem == "work":
        work.mkdir()
        (work / "old.txt").write_text("kept")
    else:
        script = tmp_path / "missing.py"
    with pytest.raises(SystemExit, match=message):
        record_script.main([str(script), *args, "--work", str(work), *extra])
    assert not (work / "train_gpt.py").exists()

