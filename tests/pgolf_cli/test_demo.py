"""`pgolf demo` end to end on CPU (data, two seeds, package, audit, review); the packaged
train_gpt.py rerun from inside its records folder; bad input refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from audits.submission.logparse import ParsedLog, parse_log
from pgolf_cli import demo_cmd
from pgolf_cli.errors import PgolfError
from pgolf_cli.main import cli
from pgolf_cli.packaging.settings import changed_settings
from runfolders import tree
from trainer_support import SETTING_NAMES

# Each seed trains for a step count, so what the tests compare does not depend on the machine's
# speed: the demo's 20,000-step limit is lowered, and its wallclock cap is the record track's
# 600 s, which these steps never come near (the tiny preset's warmdown would start at 168 s).
DEMO_STEPS = 8  # steps 1 to 5 logged each, then the last
SECONDS = 600
# A step-counted rerun, as short as keeps steps 1-5 at the full learning rate (4/15 < 0.28) and
# without the loops (4/15 < 0.35), as they ran in the demo under its cap.
RERUN_STEPS = 15
# One thread: the fastest for the tiny model on a small machine, and the same in both runs.
THREADS = {"OMP_NUM_THREADS": "1"}
FILES = ["README.md", "loss_curves.png", "requirements.txt", "review.md", "submission.json",
         "train_gpt.py", "train_seed314.log", "train_seed42.log"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """One demo run, shared: the result, the --out folder and the records folder."""
    out = tmp_path_factory.mktemp("demo") / "pgolf-demo"
    env = {**{name: None for name in SETTING_NAMES}, **THREADS}  # no stray trainer settings
    args = ["demo", "--out", str(out), "--seconds", str(SECONDS)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(demo_cmd, "MAX_STEPS", DEMO_STEPS)
        result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [folder] = (out / "records" / "track_non_record_16mb").iterdir()
    return result, out, folder


@pytest.mark.slow
def test_demo_writes_an_audited_and_reviewed_records_folder(demo):
    result, out, folder = demo
    assert sorted(p.name for p in folder.iterdir()) == FILES
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["seed314", "seed42"]
    data = json.loads((folder / "submission.json").read_text())
    assert data["track"] == "non_record_16mb" and data["seeds"] == [42, 314]
    assert data["compliance"]["verdict"] == "PASS"
    assert data["hardware"].startswith("1x cpu")  # from the logs' `device:` line
    review = (folder / "review.md").read_text()
    assert review.startswith("**pgolf review: PASS**") and ": 0 FAIL, 0 WARN," in review
    assert "**Smoke test:** passed: " in review
    # CPU runs of a sample corpus cannot be a record: the packager chose the non-record track
    assert any(line.startswith("  track    non-record: RECORD_RUN: no 8xH100 run: ")
               for line in result.output.splitlines())
    # The sample corpus is not FineWeb, so the validation split's coverage is noted, not judged.
    assert "validation tokens on a dataset pgolf does not know" in review
    # review.md is what `pgolf review` prints for the folder, review.md included.
    assert CliRunner().invoke(cli, ["review", str(folder)]).output == review
    # The reproduction command sets what the demo changed, with the data under ./data/.
    readme = (folder / "README.md").read_text()
    assert "From this folder, on a CPU" in readme
    assert "differ between the runs" not in readme  # seeds differ only in what names a run
    assert (f"  PRESET=tiny ITERATIONS={DEMO_STEPS} MAX_WALLCLOCK_SECONDS={float(SECONDS)} "
            "DATA_PATH=./data/datasets/kjv_sp1024 TOKENIZER_PATH=./data/tokenizers/kjv_1024_bpe.model "
            "SEED=$SEED python train_gpt.py") in readme
    summary = result.output.splitlines()
    assert any(line.startswith("submission") and line.endswith("PASS") for line in summary)
    assert f"records: {folder}" in summary and f"review:  {folder / 'review.md'}" in summary


def unclocked_losses(log: ParsedLog) -> list[float]:
    """The first logged train losses the wallclock cap cannot have changed.

    Under a cap the warmdown starts, and later the loops switch on, once the training time passes
    a fraction of the cap, so the loss of step k matches a step-counted run while the time after
    step k-1 is below (1 - WARMDOWN_FRAC) of the cap. Steps 1 to 5 are each logged."""
    hp = {name: float(log.hparams[name].value)
          for name in ("max_wallclock_seconds", "gptq_reserve_seconds", "warmdown_frac")}
    full_lr_ms = (1000 * (hp["max_wallclock_seconds"] - hp["gptq_reserve_seconds"])
                  * (1 - hp["warmdown_frac"]))
    losses, before_ms = [], 0.0
    for step in log.steps[:5]:
        if before_ms >= full_lr_ms:
            break
        losses.append(step.train_loss)
        before_ms = step.train_time_ms
    return losses


@pytest.mark.slow
def test_packaged_script_reruns_its_logs_first_steps(demo, tmp_path):
    _, _, folder = demo
    packaged = parse_log((folder / "train_seed42.log").read_text())
    hp = {name: str(value.value) for name, value in packaged.hparams.items()}
    # What the demo set for the run, read back from its log's Hyperparameters block as the
    # README's reproduction section asks; then a step count instead of the clock, and no export.
    # The data paths are the logged absolute ones: the README's ./data/ is not in the folder.
    env = {k: v for k, v in os.environ.items() if k not in SETTING_NAMES}
    env.update(THREADS, **changed_settings(hp)[0])
    env.update(SEED=hp["seed"], DATA_PATH=hp["data_path"], TOKENIZER_PATH=hp["tokenizer_path"],
               MAX_WALLCLOCK_SECONDS="0", ITERATIONS=str(RERUN_STEPS), PREQUANT_ONLY="1",
               OUT_DIR=str(tmp_path))
    before = tree(folder)
    done = subprocess.run([sys.executable, "train_gpt.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert tree(folder) == before
    rerun = parse_log((tmp_path / "train.log").read_text())
    expected = unclocked_losses(packaged)
    assert len(expected) == 5  # steps 1 to 5, all far inside the cap's full learning rate
    assert [s.train_loss for s in rerun.steps[:len(expected)]] == expected


def test_the_sample_data_is_written_once_then_checked_and_used_again(tmp_path, capsys):
    root = tmp_path / "data"
    dataset, tokenizer = demo_cmd._data(root)
    written = {path: path.stat().st_mtime_ns for path in root.rglob("*")}
    assert "(checked, used again)" not in capsys.readouterr().out
    assert demo_cmd._data(root) == (dataset, tokenizer)
    assert "(checked, used again)" in capsys.readouterr().out
    assert {path: path.stat().st_mtime_ns for path in root.rglob("*")} == written  # nothing rewritten
    tokenizer.write_bytes(b"not the sample's")
    with pytest.raises(PgolfError, match="is not the sample's tokenizer; give another --data-dir"):
        demo_cmd._data(root)


@pytest.mark.parametrize("args, message", [
    (["--out", "{busy}"], "--out {busy} is not empty; give a new or empty folder, or add --force"),
    (["--out", "{file}"], "--out {file} is a file"),
    (["--out", "{new}", "--seconds", "0"], "--seconds 0 is not a training time"),
])
def test_bad_input_stops_in_one_line_and_writes_nothing(tmp_path, args, message):
    paths = {"busy": tmp_path / "busy", "file": tmp_path / "file", "new": tmp_path / "new"}
    paths["busy"].mkdir()
    (paths["busy"] / "notes.txt").write_text("mine\n")
    paths["file"].write_text("mine\n")
    before = tree(tmp_path)
    result = CliRunner().invoke(cli, ["demo", *(a.format(**paths) for a in args)])
    assert result.exit_code == 2
    assert message.format(**paths) in result.output and result.output.count("\n") == 1
    assert tree(tmp_path) == before
