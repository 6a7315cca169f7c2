import torch

from benchmarks.doc_attention import cu_seqlens, pairs_inside_documents

BOS = 1


def test_segments_start_at_each_window_and_each_bos():
    x = torch.tensor([[5, 6, BOS, 7, 8, 9],
                      [BOS, 4, 4, 4, BOS, 4]])
    # row 0: [5 6] [BOS 7 8 9]; row 1: [BOS 4 4 4] [BOS 4]
    assert cu_seqlens(x).tolist() == [0, 2, 6, 10, 12]
    assert cu_seqlens(x).dtype == torch.int32


def test_pairs_inside_documents():
    one_document = torch.tensor([[BOS, 3, 3, 3]])
    assert pairs_inside_documents(cu_seqlens(one_document), 4) == 1.0
    halves = torch.tensor([[BOS, 3, BOS, 3]])
    assert pairs_inside_documents(cu_seqlens(halves), 4) == (3 + 3) / 10
