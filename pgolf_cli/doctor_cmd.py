"""`pgolf doctor`: one table of what this machine can run, and whether the record path is one.

The record path (`pgolf train` with the record preset) needs torch, a CUDA GPU and the data under
--data-dir; those rows decide the exit status. The rest says what is faster or safer: the
attention and GEMM kernels (the trainer falls back without them), the smoke import's sandbox and
its Python. The only measurement is a short bf16 matmul, and only where there is a GPU.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import click

from pgolf_cli.errors import PgolfError

OK, NO, INFO = "ok", "NO", "-"
KERNELS = {"FlashAttention 3": "flash_attn_interface", "FlashAttention 4": "flash_attn.cute",
           "quack GEMM": "quack"}
_MATMUL_N = 8192
_MATMUL_REPEATS = 20


@click.command("doctor")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("data"),
              show_default=True, help="The data root `pgolf train --data-dir` would read.")
@click.option("--vocab-size", type=int, default=None,
              help="The vocabulary of the data to check [default: the record preset's].")
def doctor_command(data_dir: Path, vocab_size: int | None) -> None:
    """Say what this machine can run: GPU and its bf16 rate, torch and CUDA, the attention
    kernels, the smoke import's sandbox and Python 3.10, and the data under --data-dir.

    Exit status: 0 the record path can run here, 1 it cannot (the NO rows say why).
    """
    rows = [("python", OK, sys.version.split()[0])]
    torch = _torch()
    rows += _torch_rows(torch)
    rows += _kernel_rows(torch)
    rows += _sandbox_rows()
    rows += _data_rows(data_dir, vocab_size)
    click.echo(_table(rows))
    blocking = [name for name, status, _ in rows if status == NO]
    if blocking:
        click.echo(f"the record path cannot run here: {', '.join(blocking)}")
        sys.exit(1)
    click.echo("the record path can run here")


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _torch_rows(torch) -> list[tuple[str, str, str]]:
    if torch is None:
        return [("torch", NO, "not installed: pip install 'pgolf[train]'")]
    rows = [("torch", OK, torch.__version__)]
    if not torch.cuda.is_available():
        cuda = torch.version.cuda
        return rows + [("CUDA GPU", NO, "none visible" + (f" (torch built for CUDA {cuda})" if cuda
                                                         else " (a CPU build of torch)"))]
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    rows.append(("CUDA GPU", OK, f"{len(names)} x {names[0]}; CUDA {torch.version.cuda}"))
    rows.append(("bf16 matmul", INFO, f"{_bf16_tflops(torch):.0f} TFLOP/s "
                 f"({_MATMUL_N}x{_MATMUL_N}, GPU 0; an H100 SXM gives about 700)"))
    return rows


def _bf16_tflops(torch) -> float:
    """A short probe, not a benchmark: a few warm-up products, then the mean of a few more."""
    a = torch.randn(_MATMUL_N, _MATMUL_N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(_MATMUL_N, _MATMUL_N, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(_MATMUL_REPEATS):
        a @ b
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1000 / _MATMUL_REPEATS
    return 2 * _MATMUL_N**3 / seconds / 1e12


def _kernel_rows(torch) -> list[tuple[str, str, str]]:
    """Whether each kernel package imports; the trainer falls back without it, so never NO."""
    rows = []
    for name, module in KERNELS.items():
        if torch is None:
            rows.append((name, INFO, "not tried (no torch)"))
            continue
        try:
            importlib.import_module(module)
        except Exception as exc:  # a broken build fails in many ways; say which, do not stop
            found = importlib.util.find_spec(module.split(".")[0]) is not None
            why = f"{type(exc).__name__}: {exc}" if found else "not installed"
            rows.append((name, INFO, f"{why} (the trainer falls back)"[:100]))
        else:
            rows.append((name, OK, f"{module} imports"))
    return rows


def _sandbox_rows() -> list[tuple[str, str, str]]:
    from audits.smoke import isolation

    level = isolation.best().level
    sandbox = {"bubblewrap": "bubblewrap: a private read-only filesystem, no network",
               "unshare": "unshare: no network, own PIDs; the host's filesystem (install bubblewrap)",
               "none": "none: no isolation (install bubblewrap)"}[level]
    python = isolation.interpreter((3, 10)).path  # python3.10 when it has torch, else this one
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    has_torch = importlib.util.find_spec("torch") is not None
    if python != sys.executable or (here == "3.10" and has_torch):
        smoke = (OK, f"{python} with torch")
    elif has_torch:
        smoke = (INFO, f"no python3.10 with torch on PATH: the smoke import runs on Python {here}")
    else:
        smoke = (INFO, "no Python with torch: the smoke import is skipped")
    return [("smoke sandbox", OK if level != "none" else INFO, sandbox),
            ("smoke Python 3.10", *smoke)]


def _data_rows(data_dir: Path, vocab_size: int | None) -> list[tuple[str, str, str]]:
    """The shards and the tokenizer where the record preset looks for them, checked as `pgolf
    data verify` checks them."""
    from trainer.config import load_config
    from trainer.errors import TrainerError

    overrides = {"DATA_DIR": str(data_dir)}
    if vocab_size is not None:
        overrides["VOCAB_SIZE"] = str(vocab_size)
    try:
        cfg = load_config({k: v for k, v in os.environ.items() if k in ("DATA_PATH", "TOKENIZER_PATH")},
                          overrides)
    except TrainerError as exc:
        raise PgolfError(str(exc)) from None
    rows = []
    try:
        from trainer.dataprep import verify_shards

        summary = verify_shards(cfg.data_path, cfg.vocab_size)
        if not summary["train"].files or not summary["val"].files:
            raise TrainerError(f"{cfg.data_path}: no train or no validation shards "
                               "(pgolf data fineweb writes them)")
        rows.append(("data shards", OK, f"{cfg.data_path}: {len(summary['train'].files)} train, "
                     f"{len(summary['val'].files)} val shards checked"))
    except TrainerError as exc:
        rows.append(("data shards", NO, str(exc)))
    tokenizer = Path(cfg.tokenizer_path)
    if not tokenizer.is_file():
        rows.append(("tokenizer", NO, f"{tokenizer} does not exist"))
    else:
        import sentencepiece as spm

        try:
            pieces = spm.SentencePieceProcessor(model_file=str(tokenizer)).vocab_size()
        except (OSError, RuntimeError):
            rows.append(("tokenizer", NO, f"{tokenizer} is not a SentencePiece model"))
        else:
            rows.append(("tokenizer", OK if pieces == cfg.vocab_size else NO,
                         f"{tokenizer}: {pieces} pieces (VOCAB_SIZE={cfg.vocab_size})"))
    return rows


def _table(rows: list[tuple[str, str, str]]) -> str:
    width = max(len(name) for name, _, _ in rows)
    return "\n".join(f"{name:<{width}}  {status:<2}  {detail}" for name, status, detail in rows)
