"""benchmarks/ablation.py: which settings each arm runs, how arms share the GPUs, the table.

The arms themselves are GPU runs (docs/benchmarks.md); here the runner runs small commands."""

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from benchmarks import ablation, record_script
from trainer.config import PRESETS, load_config
from trainer_support import SAMPLE_DOCS, SAMPLE_TOKENIZER

RECORD_LOG = """\
stopping_early: wallclock_cap train_time: 172031ms step: 251/20000
diagnostic pre-quantization post-ema val_loss:2.32848665 val_bpb:1.06395844 eval_time:6718ms
Total submission size quantized+brotli: 15897259 bytes
diagnostic quantized val_loss:2.34727563 val_bpb:1.07254371 eval_time:49995ms
quantized_ttt_phased val_loss:2.31944212 val_bpb:1.05989454 eval_time:508785ms
total_eval_time:508.8s
"""


def test_every_frontier_setting_belongs_to_one_technique():
    named = [name for names in ablation.TECHNIQUES.values() for name in names]
    assert sorted(named) == sorted(PRESETS["frontier"])


def test_the_techniques_alone_add_up_to_the_frontier():
    together = {}
    for technique in ablation.TECHNIQUES:
        together.update(ablation.arm_settings(f"record+{technique}"))
    alone = dataclasses.asdict(load_config({}, together))
    frontier = dataclasses.asdict(load_config({}, {"PRESET": "frontier"}))
    assert (alone.pop("preset"), frontier.pop("preset")) == ("record", "frontier")
    assert alone == frontier


@pytest.mark.parametrize("arm", ["record", "frontier", *(f"record+{t}" for t in ablation.TECHNIQUES),
                                 *(f"frontier+{x}" for x in ablation.EXTRAS)])
def test_every_arm_is_a_valid_config(arm):
    load_config({}, ablation.arm_settings(arm))  # a setting that does not exist or fit raises


def test_arm_settings_and_unknown_arms():
    assert ablation.arm_settings("record") == {}
    assert ablation.arm_settings("record+smear_gate") == {"SMEAR_GATE_ENABLED": "True"}
    assert ablation.arm_settings("record+lanes") == {"PARALLEL_LANES": "True",
                                                     "PARALLEL_RESIDUAL_START": "8"}
    assert ablation.arm_settings("frontier+awq") == {"PRESET": "frontier", "AWQ_GROUPS": "1"}
    lora = load_config(env={}, overrides=ablation.arm_settings("record+lora_ttt"))
    assert lora.ttt_mode == "lora" and lora.ttt_enabled and not lora.sliding_window_enabled
    assert lora.preset == "record" and not lora.lqer_enabled
    with pytest.raises(SystemExit, match=r"unknown arm 'record\+awq'; one of: record, frontier, "):
        ablation.arm_settings("record+awq")


def _job(tmp_path, name, code=0):
    script = (f"import os, pathlib; pathlib.Path({str(tmp_path)!r}, {name!r} + '.gpu')"
              f".write_text(' '.join(os.environ[v] for v in ('CUDA_VISIBLE_DEVICES', 'OMP_NUM_THREADS', "
              f"'TORCHINDUCTOR_COMPILE_THREADS'))); "
              f"print('ran'); raise SystemExit({code})")
    return [sys.executable, "-c", script]


def test_run_parallel_gives_each_job_one_gpu_and_keeps_exit_codes(tmp_path, capsys, monkeypatch):
    """Each job sees one GPU and half the CPU threads, for its math and its compiles (two at once
    on 16 cores)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    jobs = {name: _job(tmp_path, name, code) for name, code in
            (("a", 0), ("b", 3), ("c", 0), ("d", 0), ("e", 0))}
    codes = dict(ablation.run_parallel(jobs, 2, tmp_path))
    assert codes == {"a": 0, "b": 3, "c": 0, "d": 0, "e": 0}
    assert {(tmp_path / f"{name}.gpu").read_text() for name in jobs} == {"0 8 8", "1 8 8"}
    assert all((tmp_path / f"{name}.log").read_text() == "ran\n" for name in jobs)
    out = capsys.readouterr().out
    assert out.count("started ") == 5 and "finished b: exit 3 after " in out
    # No more than two at once: each start after the first two follows a finish.
    events = [line.split()[0] for line in out.splitlines()]
    running = 0
    for event in events:
        running += 1 if event == "started" else -1
        assert running <= 2


def test_the_table_is_rewritten_as_each_arm_finishes(tmp_path):
    """One GPU, so `b` starts only once `a` has finished: by then the table holds `a`'s row."""
    summary = json.dumps({"train": {"steps": 10, "train_seconds": 5.0, "eval_seconds": 1.0,
                                    "total_bytes": 7, "val_bpb": {"quantized_ttt": 1.5}}})
    a = (f"import pathlib; d = pathlib.Path({str(tmp_path)!r}, 'a'); d.mkdir(); "
         f"(d / 'user_path.json').write_text({summary!r})")
    b = (f"import pathlib; w = pathlib.Path({str(tmp_path)!r}); "
         f"(w / 'b.saw').write_text((w / 'table.md').read_text())")
    codes = ablation.run_arms({"a": [sys.executable, "-c", a], "b": [sys.executable, "-c", b]},
                              1, tmp_path)
    assert codes == {"a": 0, "b": 0}
    assert "| a | 10 | 500 |" in (tmp_path / "b.saw").read_text()


def _user_path_arm(folder, steps, seconds, scores, total_bytes):
    folder.mkdir()
    train = {"steps": steps, "train_seconds": seconds, "val_bpb": scores, "eval_seconds": 106.3,
             "total_bytes": total_bytes}
    (folder / "user_path.json").write_text(json.dumps({"train": train}))


def test_table_rows_from_both_kinds_of_arm(tmp_path, capsys):
    _user_path_arm(tmp_path / "record", 207, 168.7, {"pre-quantization": 1.0883, "quantized": 1.1,
                   "quantized_sliding_window": 1.09, "quantized_ttt": 1.08}, 15_990_000)
    _user_path_arm(tmp_path / "frontier", 210, 172.1, {"pre-quantization": 1.0784,
                   "quantized": 1.09, "quantized_ttt": 1.0701}, 15_996_254)
    (tmp_path / "record_script").mkdir()
    figures = record_script.log_figures(RECORD_LOG)
    (tmp_path / "record_script" / "record_script.json").write_text(json.dumps(figures))
    (tmp_path / "data").mkdir()  # the shards' folder: no summary, no row
    ablation.main(["table", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines == (tmp_path / "table.md").read_text().splitlines() and len(lines) == 5
    assert lines[2] == ("| frontier | 210 | 820 | 1.0784 | 1.0900 |  | 1.0701 | 15,996,254 | 106 "
                        "| -0.0099 |")
    assert lines[3] == "| record | 207 | 815 | 1.0883 | 1.1000 | 1.0900 | 1.0800 | 15,990,000 | 106 | +0.0000 |"
    assert lines[4] == ("| record_script | 251 | 685 | 1.0640 | 1.0725 |  | 1.0599 | 15,897,259 | 509 "
                        "| -0.0201 |")


def test_table_without_a_record_arm_has_no_change_column_values(tmp_path, capsys):
    _user_path_arm(tmp_path / "frontier", 210, 172.1, {"quantized_ttt": 1.0701}, 1)
    ablation.main(["table", str(tmp_path)])
    assert capsys.readouterr().out.splitlines()[2].endswith("| 1 | 106 |  |")


@pytest.mark.parametrize("arms, extra, message", [
    (["record", "record+nothing"], [], r"unknown arm 'record\+nothing'"),
    (["record", "record"], [], r"an arm is named twice"),
    (["record_script"], [], r"the record_script arm needs --record-script"),
    (["record"], ["--gpus", "0"], r"--gpus must be at least 1, got 0"),
])
def test_run_refuses_bad_arms_before_running_anything(tmp_path, arms, extra, message):
    work = tmp_path / "work"
    with pytest.raises(SystemExit, match=message):
        ablation.main(["run", *arms, "--docs", "d.jsonl", "--tokenizer", "t.model", "--work",
                       str(work), *extra])
    assert not work.exists()


def test_table_of_a_folder_without_arms(tmp_path):
    with pytest.raises(SystemExit, match=r"no arm's summary under "):
        ablation.main(["table", str(tmp_path)])
    with pytest.raises(SystemExit, match=r"no folder "):
        ablation.main(["table", str(tmp_path / "missing")])


def test_the_record_script_gets_its_env_file_then_the_record_settings(tmp_path):
    args = argparse.Namespace(
        arms=["record", "record_script"], docs=Path("d.jsonl"), tokenizer=Path("t.model"),
        work=tmp_path, seconds=180.0, num_val_docs=None, caseops=True,
        record_script=Path("train_gpt.py"), record_env=Path("pr1855.env"),
        record_set=["EMA_DECAY=0.921", "TTT_LORA_RANK=64"], record_artifact=None)
    jobs = ablation.arm_commands(args)
    script = jobs["record_script"]
    assert script[script.index("--env-file") + 1] == "pr1855.env"
    assert script[script.index("--env-file") + 2:] == ["--set", "EMA_DECAY=0.921",
                                                       "--set", "TTT_LORA_RANK=64"]
    assert "EMA_DECAY=0.921" not in jobs["record"]  # pgolf's arms rescale their own
    args.record_artifact = Path("saved/final_model.int6.ptz")
    script = ablation.arm_commands(args)["record_script"]
    assert script[-2:] == ["--artifact", "saved/final_model.int6.ptz"]


def test_a_record_script_arm_runs_on_shards_made_with_the_data_options(tmp_path, capfd, monkeypatch):
    """The run end to end with a stand-in record script: the shards it reads are made first,
    with --num-val-docs; its log becomes the table's row."""
    _nvidia_smi(tmp_path, monkeypatch, {})  # whatever this machine's GPUs are doing
    script = tmp_path / "train_gpt.py"
    script.write_text(
        "import os, pathlib\n"
        "data = pathlib.Path(os.environ['DATA_PATH'])\n"
        "assert sorted(p.name for p in data.glob('fineweb_val_*.bin')) == ['fineweb_val_000000.bin']\n"
        f"print({RECORD_LOG!r})\n")
    work = tmp_path / "work"
    ablation.main(["run", "record_script", "--docs", str(SAMPLE_DOCS), "--tokenizer",
                   str(SAMPLE_TOKENIZER), "--work", str(work), "--record-script", str(script),
                   "--num-val-docs", "3"])
    summary = json.loads((work / "record_script" / "record_script.json").read_text())
    assert summary["exit_code"] == 0 and summary["steps"] == 251
    assert "val: 3 docs" in capfd.readouterr().out  # pgolf data shards, a subprocess
    assert (work / "table.md").read_text().splitlines()[2].startswith("| record_script | 251 |")


def _nvidia_smi(tmp_path, monkeypatch, busy: dict[int, str]):
    """An nvidia-smi on PATH that lists process `busy[N]` for --id=N, as the real one does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    tool.write_text("#!/bin/sh\nfor a in \"$@\"; do case $a in\n"
                    + "".join(f"  --id={gpu}) echo {pid} ;;\n" for gpu, pid in busy.items())
                    + "esac; done\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_run_refuses_gpus_another_process_is_on(tmp_path, monkeypatch):
    _nvidia_smi(tmp_path, monkeypatch, {1: "4242"})
    assert ablation.gpu_processes(range(1)) == {}
    work = tmp_path / "work"
    with pytest.raises(SystemExit, match=r"^GPU 1 is in use \(process 4242\): an arm beside it"):
        ablation.main(["run", "record", "--docs", "d.jsonl", "--tokenizer", "t.model", "--work",
                       str(work), "--gpus", "2"])
    assert not work.exists()


def test_without_nvidia_smi_no_gpu_is_busy(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi here
    assert ablation.gpu_processes(range(4)) == {}
