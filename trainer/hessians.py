"""GPTQ calibration: the Hessian X^T X of every quantized matrix's inputs, from training batches.

Calibration reads training data, so it must finish inside the 600 s training budget: the trainer
stops early by GPTQ_RESERVE_SECONDS (`gptq:reserving ...`) and this collector stops taking batches
before that reserve runs out. Calibrating after the budget, or on validation tokens, got
submissions closed (PRs #593, #728); self-generated text is the other legal source (PR #1019).
"""

from __future__ import annotations

import time

import torch
from torch import Tensor, nn

from trainer.quant import PASSTHROUGH_MAX_NUMEL
from trainer.distributed import all_reduce, synchronize
from trainer.evaluate import autocast


def hessian_targets(model: nn.Module) -> dict[str, tuple[nn.Module, int, bool]]:
    """Weight name -> (module to hook, input width, whether the module's output is the input).

    Every nn.Linear larger than the fp16 passthrough size is hooked on its input. The tied token
    embedding is also the output head, whose input is the final norm's output."""
    targets: dict[str, tuple[nn.Module, int, bool]] = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and module.weight.numel() > PASSTHROUGH_MAX_NUMEL:
            targets[f"{name}.weight"] = (module, module.weight.shape[1], False)
    emb = getattr(model, "tok_emb", None)
    if isinstance(emb, nn.Embedding) and emb.weight.numel() > PASSTHROUGH_MAX_NUMEL:
        targets["tok_emb.weight"] = (model.final_norm, emb.weight.shape[1], True)
    return targets


def collect_hessians(model: nn.Module, loader, *, max_batches: int,
                     seconds: float) -> tuple[dict[str, Tensor], int]:
    """Run up to `max_batches` training batches (`loader.next_batch()`, the trainer's training
    loader) through `model.forward_logits` and accumulate
    X^T X (fp32) per quantized matrix, stopping before `seconds` would be exceeded (a batch is
    not started unless the last one's duration still fits). Summed over ranks and divided by
    the number of input rows. Returns the Hessians (empty if no batch fit) and the batch count
    over all ranks."""
    device = next(model.parameters()).device
    targets = hessian_targets(model)
    sums = {name: torch.zeros(width, width, dtype=torch.float32, device=device)
            for name, (_, width, _) in targets.items()}
    rows = torch.zeros((), dtype=torch.float64, device=device)

    def hook_for(name: str, use_output: bool):
        def hook(module, inputs, output):
            x = (output if use_output else inputs[0]).detach().float()
            x = x.reshape(-1, x.shape[-1])
            sums[name].addmm_(x.T, x)
        return hook

    handles = [module.register_forward_hook(hook_for(name, use_output))
               for name, (module, _, use_output) in targets.items()]
    batches, start, last = 0, time.perf_counter(), 0.0
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), autocast(device):
            while batches < max_batches and time.perf_counter() - start + last <= seconds:
                t0 = time.perf_counter()
                x = loader.next_batch()[0]
                model.forward_logits(x)
                rows += x.numel()
                batches += 1
                synchronize(device)
                last = time.perf_counter() - t0
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    count = torch.tensor(batches, dtype=torch.float64, device=device)
    for total in (*sums.values(), rows, count):
        all_reduce(total)
    if rows.item() == 0:
        return {}, 0
    return {name: (h / rows).float() for name, h in sums.items()}, int(count.item())
