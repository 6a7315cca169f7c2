"""`pgolf data`: download the challenge's shards (fineweb.py); train a tokenizer, write token
shards, verify shards (trainer.dataprep)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import click

from pgolf_cli.errors import PgolfError
from pgolf_cli.fineweb import VARIANTS, fetch
from trainer.errors import TrainerError

CHALLENGE_VAL_DOCS = 50_000  # FineWeb's validation split: the first 50,000 documents


def _dataprep():
    """trainer.dataprep, imported when a command runs (numpy and sentencepiece load slowly)."""
    from trainer import dataprep

    return dataprep


def _val_docs(inputs: tuple[Path, ...], num_val_docs: int | None, val_frac: float | None) -> int:
    if num_val_docs is not None and val_frac is not None:
        raise click.UsageError("give --num-val-docs or --val-frac, not both")
    if val_frac is None:
        return CHALLENGE_VAL_DOCS if num_val_docs is None else num_val_docs
    if not 0.0 <= val_frac < 1.0:
        raise click.BadParameter("must lie in [0, 1)", param_hint="--val-frac")
    return round(val_frac * sum(1 for _ in _dataprep().iter_documents(inputs)))


def split_summary(summary) -> str:
    return "; ".join(f"{split}: {s.docs:,} docs, {s.tokens:,} tokens, {len(s.files)} shard(s)"
                     + (" and their byte sidecar" if s.sidecar_files else "")
                     for split, s in summary.items())


_inputs = click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
_num_val = click.option("--num-val-docs", type=int, default=None,
                        help=f"The first N documents are validation (default {CHALLENGE_VAL_DOCS:,}).")
_val_frac = click.option("--val-frac", type=float, default=None,
                         help="Or: this fraction of the documents, rounded.")
_caseops = click.option("--caseops", is_flag=True,
                        help="CaseOps: lowercase words with case-operator symbols (lossless); shards "
                             "also get the validation byte sidecar that keeps bpb on the original bytes.")


@click.group("data")
def data_group() -> None:
    """Download the challenge's shards, or make and verify your own.

    \b
    Inputs are JSONL files with a "text" field per line, or .txt files (one document each),
    optionally .xz or .gz, or folders of them.
    """


@data_group.command("fineweb")
@click.option("--variant", required=True, type=click.Choice(sorted(VARIANTS)),
              help="sp8192 (the records' vocabulary) or sp1024 (the challenge's baseline).")
@click.option("--train-shards", type=click.IntRange(min=0), default=80, show_default=True,
              help="The first N training shards (100,000,000 tokens each); validation comes whole.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("data"),
              show_default=True, help="Root of the layout `pgolf train --data-dir` reads.")
@click.option("--repo", default=None,
              help="Another Hub dataset repository with the same layout (default: where the variant "
                   "is published).")
def fineweb_command(variant, train_shards, data_dir, repo) -> None:
    """Download the challenge's published FineWeb shards and tokenizer from the Hugging Face Hub.

    \b
    Resumable: run it again after an interruption, or with more --train-shards; files already in
    place are checked, not fetched again. HF_HUB_OFFLINE=1 reads huggingface_hub's cache only.
    """
    got = fetch(variant, data_dir, train_shards, repo=repo, echo=click.echo)
    click.echo(f"{got['folder']}: {got['val_shards']} validation shard(s), {got['val_tokens']:,} "
               f"tokens; {got['train_shards']} training shard(s), {got['train_tokens']:,} tokens; "
               f"tokenizer {got['tokenizer']}")
    click.echo(f"train with: pgolf train --data-dir {data_dir} --set VOCAB_SIZE={VARIANTS[variant][1]}")


@data_group.command("tokenizer")
@_inputs
@click.option("--vocab-size", type=int, default=8192, show_default=True)
@click.option("--out", "model_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The .model file to write (a .vocab is written beside it).")
@_num_val
@_val_frac
@click.option("--max-docs", type=int, default=None, help="Train on at most N training documents.")
@_caseops
def tokenizer_command(inputs, vocab_size, model_path, num_val_docs, val_frac, max_docs, caseops) -> None:
    """Train a SentencePiece BPE tokenizer with the challenge's settings on the training split."""
    skip = _val_docs(inputs, num_val_docs, val_frac)
    end = None if max_docs is None else skip + max_docs
    docs = itertools.islice(_dataprep().iter_documents(inputs), skip, end)
    try:
        _dataprep().train_tokenizer(docs, vocab_size, model_path, caseops_text=caseops)
    except TrainerError as exc:
        raise PgolfError(str(exc)) from None
    except RuntimeError as exc:  # SentencePiece's own complaints (e.g. too few characters)
        raise PgolfError(f"SentencePiece: {str(exc).strip().splitlines()[-1]}") from None
    click.echo(f"wrote {model_path} ({vocab_size} pieces; the first {skip:,} documents left out)")


@data_group.command("shards")
@_inputs
@click.option("--tokenizer", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@_num_val
@_val_frac
@click.option("--shard-tokens", type=int, default=None,
              help="Most tokens per shard (default 100,000,000, the challenge's).")
@click.option("--workers", type=int, default=os.cpu_count() or 1, show_default="all cores")
@_caseops
def shards_command(inputs, tokenizer, out_dir, num_val_docs, val_frac, shard_tokens, workers,
                   caseops) -> None:
    """Tokenize documents into fineweb_val_*.bin and fineweb_train_*.bin shards (BOS per document).

    \b
    With --caseops (and a tokenizer trained with it), each validation shard also gets
    fineweb_val_bytes_NNNNNN.bin: per token, the UTF-8 bytes of the original text it stands for.
    """
    try:
        prep = _dataprep()
        size = {} if shard_tokens is None else {"shard_tokens": shard_tokens}
        summary = prep.write_shards(prep.iter_documents(inputs), tokenizer, out_dir,
                                    _val_docs(inputs, num_val_docs, val_frac), workers=workers,
                                    caseops_text=caseops, **size)
        prep.verify_shards(out_dir)
    except TrainerError as exc:
        raise PgolfError(str(exc)) from None
    click.echo(f"{out_dir}: {split_summary(summary)}")


@data_group.command("verify")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--tokenizer", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Also check token ids against this tokenizer's vocabulary.")
@click.option("--vocab-size", type=int, default=None, help="Or against this vocabulary size.")
def verify_command(folder, tokenizer, vocab_size) -> None:
    """Check every shard: header, size, token ids, a BOS at the start of each split, and the
    validation byte sidecar where there is one (a CaseOps tokenizer needs one)."""
    caseops_text = False
    if tokenizer is not None:
        import sentencepiece as spm

        from trainer.caseops import is_caseops

        sp = spm.SentencePieceProcessor(model_file=str(tokenizer))
        vocab_size, caseops_text = sp.vocab_size(), is_caseops(sp)
    try:
        summary = _dataprep().verify_shards(folder, vocab_size)
    except TrainerError as exc:
        raise PgolfError(str(exc)) from None
    if caseops_text and not summary["val"].sidecar_files:
        raise PgolfError(f"{folder}: {tokenizer} is a CaseOps tokenizer but the validation shards have "
                         "no byte sidecar (write them with `pgolf data shards --caseops`)")
    click.echo(f"{folder}: ok; {split_summary(summary)}")
