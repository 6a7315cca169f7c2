"""Helpers for the trainer tests: the embedded sample corpus as shards, trainer runs, work run in
two gloo processes, and the kernels' error measure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from trainer.config import env_name, fields
from trainer.dataprep import iter_documents, train_tokenizer, write_shards

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "pgolf_cli" / "sample" / "kjv_chapters.jsonl.xz"
SAMPLE_TOKENIZER = REPO / "pgolf_cli" / "sample" / "kjv_1024_bpe.model"
SETTING_NAMES = {env_name(f.name) for f in fields()}


def make_data_dir(root: Path, num_val_docs: int = 8, max_docs: int | None = None) -> Path:
    """A DATA_DIR in the challenge's layout built from the sample corpus (vocabulary 1024)."""
    docs = list(iter_documents([SAMPLE_DOCS]))[:max_docs]
    write_shards(docs, SAMPLE_TOKENIZER, root / "datasets" / "fineweb10B_sp1024", num_val_docs,
                 workers=1)
    (root / "tokenizers").mkdir(parents=True, exist_ok=True)
    shutil.copy(SAMPLE_TOKENIZER, root / "tokenizers" / "fineweb_1024_bpe.model")
    return root


def make_caseops_data_dir(root: Path, num_val_docs: int = 8) -> Path:
    """A DATA_DIR of CaseOps data from the sample corpus: a CaseOps tokenizer of 1024 pieces
    trained on it, shards, and the validation byte sidecar."""
    docs = list(iter_documents([SAMPLE_DOCS]))
    model = train_tokenizer(docs[num_val_docs:], 1024, root / "tokenizers" / "fineweb_1024_bpe.model",
                            threads=1, caseops_text=True)
    write_shards(docs, model, root / "datasets" / "fineweb10B_sp1024", num_val_docs, workers=1,
                 caseops_text=True)
    return root


def stand_in_corpus() -> Path | None:
    """The stand-in corpus folder (docs.jsonl.xz and both tokenizers), when this checkout has one:
    $PGOLF_CORPUS_DIR, .gpu/corpus in the repository, or the shared bench folder beside it."""
    for folder in (os.environ.get("PGOLF_CORPUS_DIR"), REPO / ".gpu" / "corpus",
                   REPO.parent / "shared" / "bench" / "corpus"):
        if folder and (Path(folder) / "docs.jsonl.xz").is_file():
            return Path(folder)
    return None


def clean_env(**settings) -> dict[str, str]:
    """The environment for a trainer subprocess: no stray settings, one thread per process (the
    models are tiny and CI machines small), the repository importable."""
    env = {k: v for k, v in os.environ.items() if k not in SETTING_NAMES}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    env.update({k: str(v) for k, v in settings.items()})
    return env


def run_trainer(args: list[str], env: dict[str, str], cwd: Path | None = None,
                timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def two_gloo_ranks(work, tmp_path: Path) -> list:
    """What `work()` (a module-level function) returns in each of two spawned processes joined
    in a gloo group, in rank order. A rank that raised fails the test with its traceback."""
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_gloo_rank, args=(r, tmp_path / "rdzv", queue, work)) for r in (0, 1)]
    for p in procs:
        p.start()
    results = sorted(queue.get(timeout=600) for _ in procs)  # before join: a full pipe blocks exit
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0], results
    return [result for _, result in results]


def _gloo_rank(rank: int, path: Path, queue, work) -> None:
    import traceback

    import torch
    import torch.distributed as dist

    from trainer import distributed
    try:
        dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=2)
        torch.set_num_threads(1)
        queue.put((rank, work()))
        distributed.stop(finished=True)
    except BaseException:
        queue.put((rank, traceback.format_exc()))
        raise
    # Once its result is in the pipe, a rank leaves without the interpreter's teardown: after
    # good runs, that teardown aborted now and then in CI ("terminate called without an active
    # exception", exit -6, either rank, with or without a barrier before leaving the group).
    queue.close()
    queue.join_thread()
    os._exit(0)


def relative_error(value, reference) -> float:
    """|value - reference| / |reference| over the whole tensors, in fp64."""
    return ((value.double() - reference.double()).norm() / reference.double().norm()).item()


def assert_as_close_as(ours, plain, exact, slack: float) -> None:
    """A kernel's outputs and gradients (`ours`) against an fp64 evaluation (`exact`) beside the
    PyTorch ops' in low precision (`plain`): each in plain's dtype, finite, within 1e-2 relative
    and no further from exact than plain is, plus `slack` (about one rounding)."""
    for value, low, expected in zip(ours, plain, exact, strict=True):
        assert value.dtype == low.dtype and torch.isfinite(value).all()
        error = relative_error(value, expected)
        assert error < 1e-2 and error <= relative_error(low, expected) + slack


def counted_compile(options: dict, **settings):
    """A tiny document-masked model with looping on, and its `forward_logits` compiled with
    `options` through a backend that appends each graph it is given to the returned list."""
    from trainer.config import load_config
    from trainer.model import GPT

    cfg = load_config(env={}, overrides={"PRESET": "tiny", "DOC_MASK": "1", **settings})
    torch.manual_seed(0)
    model = GPT(cfg)
    model.looping_active = True
    graphs = []

    def count(graph, inputs):
        graphs.append(graph)
        return graph.forward
    return model, torch.compile(model.forward_logits, backend=count, **options), graphs
