"""The settings a run changed, read back from its log, so the README's command reproduces it.

pgolf's train.log prints every setting the run resolved (`Hyperparameters:`, one `  name: value`
line each, formatted by trainer.config). Comparing that block with the defaults of the preset it
names gives the environment a reader must set: `PRESET=tiny MAX_WALLCLOCK_SECONDS=60 ...`.
"""

from __future__ import annotations

import posixpath

from trainer.config import env_name, fields, format_value, load_config
from trainer.errors import TrainerError

# Settings that name a run or where it writes: expected to differ between seeds.
PER_RUN = {"seed", "run_id", "out_dir"}
# Never copied as logged: the above, and the machine's data paths (`_data_paths` rewrites those).
_NOT_COPIED = PER_RUN | {"data_dir", "data_path", "tokenizer_path"}


def changed_settings(hparams: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(NAME -> value for every setting that differs from its preset's default, in the
    trainer's order; the logged names this trainer does not know)."""
    preset = hparams.get("preset", "record")
    try:
        defaults = load_config({"PRESET": preset})
    except TrainerError:  # a preset this trainer does not have: every logged value is a change
        defaults = None
    known = {f.name for f in fields()}
    changed = {}
    if preset != "record":
        changed["PRESET"] = preset
    for f in fields():
        if f.name in _NOT_COPIED or f.name == "preset" or f.name not in hparams:
            continue
        default = None if defaults is None else format_value(getattr(defaults, f.name))
        if hparams[f.name] != default:
            changed[env_name(f.name)] = hparams[f.name]
    changed.update(_data_paths(hparams, defaults))
    return changed, sorted(set(hparams) - known)


def _data_paths(hparams: dict[str, str], defaults) -> dict[str, str]:
    """DATA_PATH and TOKENIZER_PATH under ./data/ when the run's data is not the preset's default
    dataset: the folder and file names only, since the run's own paths are its machine's."""
    out = {}
    for name, folder in (("data_path", "datasets"), ("tokenizer_path", "tokenizers")):
        logged = hparams.get(name)
        if not logged:
            continue
        base = posixpath.basename(logged.rstrip("/\\").replace("\\", "/"))
        default = None if defaults is None else posixpath.basename(getattr(defaults, name).rstrip("/"))
        if base != default:
            out[env_name(name)] = f"./data/{folder}/{base}"
    return out
