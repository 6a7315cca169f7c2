"""Whether attention restricted to documents pays on this GPU: dense causal against document-masked.

    python -m benchmarks.doc_attention [--corpus .gpu/corpus] [--docs 5000]

The records from 2026-04-10 on pack documents and let no token attend across a document boundary
(FlashAttention 3's varlen kernel with cumulative sequence lengths from the BOS positions). That
skips the attention work between documents, so it is faster where the varlen kernel is as fast as
the dense one. This measures it with the trainer's own batches: the first --docs training
documents of the stand-in corpus are tokenized into shards, and the trainer's loader cuts its
48 x 2048 windows from them. Per micro-batch it reports the documents (segments) and the fraction
of the causal attention pairs that lie inside one document, then times forward + backward at
the record's head layout (8 query, 4 KV heads of 64, bf16, random q/k/v) for:
  - dense causal attention through cuDNN SDPA, what the trainer runs;
  - PyTorch's varlen_attn (its FlashAttention 2 kernel), document-masked;
  - FlexAttention with a document mask, compiled, document-masked;
  - flash_attn_varlen_func of FlashAttention 3 or 2, where that package is installed.
The document-masked outputs are compared with each other (they compute the same thing).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import statistics
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.train_h200 import VAL_DOCS
from trainer.data import TrainLoader
from trainer.dataprep import BOS_ID, iter_documents, write_shards
from trainer.distributed import Dist
from trainer.shards import shard_paths

REPO = Path(__file__).resolve().parents[1]

SEQS, SEQ_LEN, HEADS, KV_HEADS, HEAD_DIM = 48, 2048, 8, 4, 64


def segment_starts(x: torch.Tensor, bos_id: int = BOS_ID) -> torch.Tensor:
    """Where a segment starts in the (B, T) windows x, as a mask: each window's first token and
    every BOS; a document cut by a window edge is a segment of its own."""
    starts = x == bos_id
    starts[:, 0] = True
    return starts


def cu_seqlens(x: torch.Tensor) -> torch.Tensor:
    """Cumulative segment lengths of the flattened windows, int32, as varlen kernels take them."""
    starts = segment_starts(x).flatten().nonzero().squeeze(1)
    return torch.cat((starts, torch.tensor([x.numel()], device=x.device))).int()


def pairs_inside_documents(cu: torch.Tensor, seq_len: int) -> float:
    """Fraction of the causal (query, key) pairs of the windows whose two tokens share a segment."""
    lengths = cu.diff().double()
    windows = int(cu[-1]) // seq_len
    return float((lengths * (lengths + 1) / 2).sum() / (windows * seq_len * (seq_len + 1) / 2))


def training_windows(corpus: Path, docs: int, batches: int) -> list[torch.Tensor]:
    """The trainer loader's first micro-batches over the first `docs` training documents."""
    with tempfile.TemporaryDirectory() as tmp:
        texts = itertools.islice(iter_documents([corpus / "docs.jsonl.xz"]), VAL_DOCS + docs)
        write_shards(texts, corpus / "stand_in_8192_bpe.model", tmp, VAL_DOCS)
        loader = TrainLoader(shard_paths(tmp, "train"), SEQ_LEN, SEQS, Dist(), seed=1337,
                             device=torch.device("cpu"), prefetch=0)
        return [loader.next_batch()[0] for _ in range(batches)]


def median_ms(fn, grad: torch.Tensor, runs: int = 10) -> float:
    for _ in range(3):  # the first calls compile
        fn().backward(grad)
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn().backward(grad)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def variants(q, k, v, x: torch.Tensor) -> dict:
    """name -> a function of no arguments returning the (B, T, H, D) attention output."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    from torch.nn.attention.varlen import varlen_attn

    B, T = x.shape
    cu = cu_seqlens(x)
    longest = int(cu.diff().max())
    flat = [t.view(B * T, t.size(2), HEAD_DIM) for t in (q, k, v)]
    heads_first = [t.transpose(1, 2) for t in (q, k, v)]
    document = segment_starts(x).flatten().cumsum(0).view(B, T)  # segment index per position

    def same_document_causal(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) & (document[b, q_idx] == document[b, kv_idx])

    mask = create_block_mask(same_document_causal, B, None, T, T, device=x.device)
    flex = torch.compile(flex_attention, dynamic=False)

    def dense():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(*heads_first, is_causal=True,
                                                  enable_gqa=True).transpose(1, 2)

    found = {
        "dense causal, cuDNN SDPA (the trainer's)": dense,
        "document-masked, torch varlen_attn": lambda: varlen_attn(
            *flat, cu, cu, longest, longest, window_size=(-1, 0)).view(B, T, HEADS, HEAD_DIM),
        "document-masked, FlexAttention": lambda: flex(
            *heads_first, block_mask=mask, enable_gqa=True).transpose(1, 2),
    }
    for package in ("flash_attn_interface", "flash_attn"):  # FlashAttention 3, 2
        try:
            varlen = importlib.import_module(package).flash_attn_varlen_func
        except ImportError:
            continue
        found[f"document-masked, {package}.flash_attn_varlen_func"] = lambda f=varlen: _first(
            f(*flat, cu, cu, longest, longest, causal=True)).view(B, T, HEADS, HEAD_DIM)
    return found


def _first(out):
    return out[0] if isinstance(out, tuple) else out  # some FA3 builds also return the LSE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=REPO / ".gpu" / "corpus")
    ap.add_argument("--docs", type=int, default=5000, help="training documents to tokenize")
    ap.add_argument("--batches", type=int, default=4, help="micro-batches to time")
    args = ap.parse_args()
    device = torch.device("cuda")
    windows = training_windows(args.corpus, args.docs, args.batches)
    gen = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(SEQS, SEQ_LEN, h, HEAD_DIM, device=device, dtype=torch.bfloat16,
                           generator=gen).requires_grad_() for h in (HEADS, KV_HEADS, KV_HEADS))
    grad = torch.randn(SEQS, SEQ_LEN, HEADS, HEAD_DIM, device=device, dtype=torch.bfloat16,
                       generator=gen)
    times: dict[str, list[float]] = {}
    for i, x in enumerate(windows):
        x = x.to(device)
        cu = cu_seqlens(x)
        print(f"micro-batch {i}: {len(cu) - 1} segments, longest {int(cu.diff().max())}, "
              f"{pairs_inside_documents(cu, SEQ_LEN):.3f} of the causal pairs inside one document")
        found = variants(q, k, v, x)
        outputs = {}
        for name, fn in found.items():
            times.setdefault(name, []).append(median_ms(fn, grad))
            with torch.no_grad():
                outputs[name] = fn().float()
        masked = [out for name, out in outputs.items() if name.startswith("document")]
        spread = max((a - masked[0]).abs().max().item() for a in masked[1:]) if len(masked) > 1 else 0.0
        print(f"  document-masked outputs agree to {spread:.2e} (bf16 outputs)")
    print(f"\nforward + backward, median over {len(windows)} micro-batches of {SEQS} x {SEQ_LEN}:")
    dense_ms = statistics.median(next(iter(times.values())))
    for name, ms in times.items():
        print(f"  {statistics.median(ms):7.3f} ms  {statistics.median(ms) / dense_ms:5.2f}x  {name}")


if __name__ == "__main__":
    main()
