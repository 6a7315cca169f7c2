"""A record's own `train_gpt.py` on pgolf's shards, for the side-by-side with `pgolf train`.

    python -m benchmarks.record_script SCRIPT --data DIR --tokenizer MODEL --work WORK \\
        [--seconds 180] [--env-file benchmarks/pr1855.env] [--set NAME=VALUE ...] [--artifact FILE]

SCRIPT runs unchanged as one process in WORK (so with the gradient accumulation of 8 that the
records use at world size 1), with the settings of --env-file and then --set, and four the
benchmark gives as the records name them: DATA_PATH, TOKENIZER_PATH, MAX_WALLCLOCK_SECONDS and
SEED (42, as `benchmarks.user_path`). Where FlashAttention 3 (`flash_attn_interface`) is not
installed, `benchmarks/fa3_shim` comes first on the script's import path: its module of that name
serves FA3's two functions through pgolf's FlashAttention 4 ops, the one change to the record.

With --artifact, the quantized model the script saved in an earlier run is put in WORK under the
name the script loads it by, and the script runs with its own TTT_EVAL_ONLY=1: no training, no
export, only its TTT evaluation of that model. So a run too long for one GPU session can be split
in two; the data and tokenizer must be those the artifact was trained and scored with.

The script's output goes to WORK/script.log. Printed and written to WORK/record_script.json: the
wall time, the steps and training time where it stopped, each `NAME val_loss:... val_bpb:...` line
of the log (score and eval time), the total evaluation time and the submission's size.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.user_path import SEED

SHIM = Path(__file__).resolve().parent / "fa3_shim"
REPO = Path(__file__).resolve().parents[1]

_STOP = re.compile(r"^stopping_early: \w+ train_time: (\d+)ms step: (\d+)/", re.M)
_SCORE = re.compile(r"^(\S.*?) val_loss:([\d.]+) val_bpb:([\d.]+)(?: eval_time:(\d+)ms)?\s*$", re.M)
_SIZE = re.compile(r"^Total submission size (\S+): (\d+) bytes", re.M)
_EVAL = re.compile(r"^total_eval_time:([\d.]+)s", re.M)
# Where #1855's script saves its quantized model, and loads it from with TTT_EVAL_ONLY=1.
ARTIFACT_NAME = "final_model.int6.ptz"


def _setting(text: str, where: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise SystemExit(f"{where}: not NAME=VALUE: {text!r}")
    return name.strip(), value.strip()


def read_env_file(path: Path) -> dict[str, str]:
    """NAME=VALUE lines; blank lines and `#` comments skipped."""
    lines = enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
    return dict(_setting(line.strip(), f"{path}:{number}") for number, line in lines
                if line.strip() and not line.strip().startswith("#"))


def script_env(settings: dict[str, str]) -> dict[str, str]:
    """This process's environment with the settings, and the FA3 shim where FA3 is missing."""
    env = {**os.environ, **settings}
    if importlib.util.find_spec("flash_attn_interface") is None:
        path = [str(SHIM), str(REPO), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def log_figures(text: str) -> dict:
    """What a record's log says about its run: where training stopped, scores, size."""
    stop = _STOP.search(text)
    sizes = _SIZE.findall(text)
    total_eval = _EVAL.search(text)
    return {
        "steps": int(stop.group(2)) if stop else None,
        "train_seconds": int(stop.group(1)) / 1000 if stop else None,
        "scores": {name: {"val_bpb": float(bpb), "eval_seconds": ms and int(ms) / 1000}
                   for name, _, bpb, ms in _SCORE.findall(text)},
        "total_eval_seconds": float(total_eval.group(1)) if total_eval else None,
        "total_bytes": int(sizes[-1][1]) if sizes else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("script", type=Path, help="the record's train_gpt.py")
    parser.add_argument("--data", type=Path, required=True,
                        help="folder of fineweb_train_*.bin and fineweb_val_*.bin shards")
    parser.add_argument("--tokenizer", type=Path, required=True, help="SentencePiece .model")
    parser.add_argument("--work", type=Path, required=True, help="a new folder to run in")
    parser.add_argument("--seconds", type=float, default=180.0, help="MAX_WALLCLOCK_SECONDS")
    parser.add_argument("--env-file", type=Path, help="the record's settings, NAME=VALUE lines")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="one more setting, after the file's")
    parser.add_argument("--artifact", type=Path,
                        help=f"the script's {ARTIFACT_NAME} of an earlier run: its TTT evaluation alone")
    args = parser.parse_args(argv)
    inputs = [(args.script, "script"), (args.data, "data folder"), (args.tokenizer, "tokenizer")]
    if args.artifact:
        inputs.append((args.artifact, "artifact"))
    for path, what in inputs:
        if not path.exists():
            raise SystemExit(f"no {what} at {path}")
    if args.work.exists() and any(args.work.iterdir()):
        raise SystemExit(f"{args.work} is not empty; give a new folder")
    settings = read_env_file(args.env_file) if args.env_file else {}
    settings.update(_setting(item, "--set") for item in args.set)
    settings.update(DATA_PATH=str(args.data.resolve()), TOKENIZER_PATH=str(args.tokenizer.resolve()),
                    MAX_WALLCLOCK_SECONDS=f"{args.seconds:g}", SEED=str(SEED))
    if args.artifact:
        settings["TTT_EVAL_ONLY"] = "1"

    args.work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.script, args.work / "train_gpt.py")
    if args.artifact:
        shutil.copyfile(args.artifact, args.work / ARTIFACT_NAME)
    output = args.work / "script.log"
    started = time.perf_counter()
    with open(output, "w") as sink:
        done = subprocess.run([sys.executable, "train_gpt.py"], cwd=args.work, stdout=sink,
                              stderr=subprocess.STDOUT, env=script_env(settings))
    seconds = time.perf_counter() - started
    figures = log_figures(output.read_text(encoding="utf-8", errors="replace"))
    summary = {"exit_code": done.returncode, "wall_seconds": seconds, **figures,
               "settings": settings}
    (args.work / "record_script.json").write_text(json.dumps(summary, indent=2) + "\n")
    ran = (f"TTT alone on {args.artifact}" if args.artifact else
           f"{figures['steps']} steps in {figures['train_seconds']} s; {figures['total_bytes']} bytes")
    print(f"{args.script.name}: exit {done.returncode} after {seconds:.1f} s; {ran}; "
          f"eval {figures['total_eval_seconds']} s")
    for name, score in figures["scores"].items():
        print(f"  {name}: val_bpb {score['val_bpb']:.5f}"
              + (f" in {score['eval_seconds']:.1f} s" if score["eval_seconds"] else ""))
    if done.returncode != 0:
        raise SystemExit(f"the script exited {done.returncode}; see {output}")


if __name__ == "__main__":
    main()
