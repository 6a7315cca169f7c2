"""The run's log: rank 0 writes plain lines to train.log and stdout; other ranks stay quiet.

Lines keep the challenge's formats so its tools and `pgolf audit` read them: the `Hyperparameters:`
block, `Running Python X.Y.Z`, `Running PyTorch V`, nvidia-smi's table (the GPU name),
`code_sha256: <hex>`, `seed:N`, `train_shards: N`, `val_tokens: N`, step lines with exact
milliseconds, `stopping_early: ...` and `peak memory allocated: ...`.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from pathlib import Path
from collections.abc import Callable
from typing import TextIO

import torch

from trainer.codesize import MinifyError, minify
from trainer.config import Config, hyperparameter_lines
from trainer.extras import EXTRAS

_file: TextIO | None = None
_enabled = False
_echo: Callable[[str], None] = print  # replaced by the live progress display on a terminal


def open_log(path: Path | None, enabled: bool) -> None:
    """Start logging: `enabled` on rank 0 only; lines are appended to `path` when given."""
    global _file, _enabled
    close_log()
    _enabled = enabled
    if enabled and path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        _file = open(path, "a", encoding="utf-8")


def close_log() -> None:
    global _file
    if _file is not None:
        _file.close()
        _file = None


def set_echo(echo: Callable[[str], None]) -> None:
    global _echo
    _echo = echo


def log(message: str, console: bool = True) -> None:
    """One or more lines to the log file and (unless `console` is False) to stdout, rank 0 only."""
    if not _enabled:
        return
    if console:
        _echo(message)
    if _file is not None:
        _file.write(message + "\n")
        _file.flush()


def log_run_header(cfg: Config, world_size: int, code_path: Path | None) -> None:
    """The settings and the software, hardware and code the run used (rank 0 logs them)."""
    if not _enabled:
        return
    for line in hyperparameter_lines(cfg):
        log(line)
    log(f"Running Python {platform.python_version()}")
    log(f"Running PyTorch {torch.__version__}")
    if torch.cuda.is_available():
        log(nvidia_smi(), console=False)
        log(f"device: {torch.cuda.get_device_name()} x{world_size}")
    else:
        log(f"device: cpu ({platform.processor() or platform.machine()}) x{world_size}")
    if code_path is not None:
        source = code_path.read_bytes()
        log(f"code_sha256: {hashlib.sha256(source).hexdigest()}")
        # The hash of the minified form too: `pgolf package` ships that form inside a
        # self-extracting wrapper, and the audit matches the wrapper's payload against it. A
        # record bundle is that form already (trainer.bundle writes it minified).
        if not EXTRAS:
            return
        try:
            minified = minify(source.decode("utf-8"))
            log(f"code_minified_sha256: {hashlib.sha256(minified.encode('utf-8')).hexdigest()}")
        except (MinifyError, UnicodeDecodeError):
            pass  # a file the minifier cannot read can only ship as it is: code_sha256 covers it
    elif EXTRAS:  # a bundle always has its file
        log("code: the trainer package, not a bundled train_gpt.py (no code_sha256)")


def nvidia_smi() -> str:
    try:
        out = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30, check=False)
        return out.stdout.rstrip() or out.stderr.rstrip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi: {exc}"

