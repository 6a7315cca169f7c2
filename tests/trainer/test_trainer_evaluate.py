import dataclasses
import math
import shutil

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from trainer.bpb import build_byte_tables, load_tokenizer, target_bytes
from trainer.config import load_config
from trainer.data import load_validation_tokens
from trainer.distributed import Dist
from trainer.errors import TrainerError
from trainer.evaluate import ValidationSet, evaluate, load_validation
from trainer.model import GPT
from trainer.preflight import find_data
from trainer.shards import open_shard, write_shard


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


def _model(cfg):
    torch.manual_seed(0)
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return model


def test_caseops_val_bpb_counts_the_sidecar_s_bytes(caseops_data_dir):
    cfg = load_config({"PRESET": "tiny", "DATA_DIR": str(caseops_data_dir)})
    data = find_data(cfg)
    val = load_validation(cfg, data.val, data.tokenizer, torch.device("cpu"))
    assert val.sidecar is not None and val.sidecar.numel() == val.tokens.numel()
    model = _model(cfg)
    loss, bpb = evaluate(model, val, cfg, Dist(), torch.device("cpu"))

    tokens = val.tokens.long()
    y = tokens[1:].view(-1, cfg.eval_seq_len)
    with torch.no_grad():
        nats = F.cross_entropy(model.forward_logits(tokens[:-1].view_as(y)).reshape(-1, cfg.vocab_size),
                               y.reshape(-1), reduction="sum").item()
    sidecar_bytes = val.sidecar[1:].sum().item()
    assert math.isclose(bpb, nats / math.log(2) / sidecar_bytes, rel_tol=1e-5)
    # the pieces' tables would count each case operator as three bytes
    assert target_bytes(val.tables, tokens[:-1], tokens[1:]).sum().item() > 1.05 * sidecar_bytes


def test_a_caseops_tokenizer_needs_the_sidecar(caseops_data_dir, tmp_path):
    shutil.copytree(caseops_data_dir, tmp_path / "d")
    folder = tmp_path / "d" / "datasets" / "fineweb10B_sp1024"
    cfg = load_config({"PRESET": "tiny", "DATA_DIR": str(tmp_path / "d")})
    sidecar = sorted(folder.glob("fineweb_val_bytes_*.bin"))
    short = np.array(open_shard(sidecar[0]))[:-1]
    write_shard(sidecar[0], short)
    with pytest.raises(TrainerError, match="byte counts for the"):
        load_validation(cfg, find_data(cfg).val, find_data(cfg).tokenizer, torch.device("cpu"))
    for path in sidecar:
        path.unlink()
    with pytest.raises(TrainerError, match="is a CaseOps tokenizer, but the validation shards have no"):
        load_validation(cfg, find_data(cfg).val, find_data(cfg).tokenizer, torch.device("cpu"))
