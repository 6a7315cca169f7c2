import dataclasses
import math

import torch
import torch.nn.functional as F

from trainer.bpb import build_byte_tables, load_tokenizer, target_bytes
from trainer.config import load_config
from trainer.data import load_validation_tokens
from trainer.distributed import Dist
from trainer.evaluate import ValidationSet, evaluate
from trainer.model import GPT
from trainer.preflight import find_data


def test_val_bpb_is_loss_in_bits_times_tokens_per_byte(data_dir):
    cfg = load_config({"PRESET": "tiny", "DATA_DIR": str(data_dir)})
    data = find_data(cfg)
    tables = build_byte_tables(load_tokenizer(data.tokenizer, cfg.vocab_size), cfg.vocab_size)
    val = ValidationSet(load_validation_tokens(data.val, cfg.eval_seq_len), tables)
    torch.manual_seed(0)
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    loss, bpb = evaluate(model, val, cfg, Dist(), torch.device("cpu"))

    tokens = val.tokens.long()
    x, y = tokens[:-1].view(-1, cfg.eval_seq_len), tokens[1:].view(-1, cfg.eval_seq_len)
    with torch.no_grad():
        nats = F.cross_entropy(model.forward_logits(x).reshape(-1, cfg.vocab_size), y.reshape(-1),
                               reduction="sum").item()
    byte_count = target_bytes(tables, x, y).sum().item()
    assert math.isclose(loss, nats / y.numel(), rel_tol=1e-5)
    assert math.isclose(bpb, nats / math.log(2) / byte_count, rel_tol=1e-5)
    # The batch size changes nothing.
    small = dataclasses.replace(cfg, val_batch_tokens=8 * cfg.eval_seq_len)
    assert math.isclose(evaluate(model, val, small, Dist(), torch.device("cpu"))[1], bpb, rel_tol=1e-5)
