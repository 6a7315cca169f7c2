"""The squared-LeakyReLU MLP: compiled PyTorch ops (cuBLAS + inductor) vs the fused op, on a GPU.

    PYTHONPATH=. python benchmarks/fused_mlp_bench.py [--rows 98304]

The defaults are one micro-batch of one record-preset block (98,304 tokens, 512 -> 2048 -> 512,
slope 0.5, bf16). Prints, as medians of 20 timed runs after warmup:
  - forward + backward of the whole MLP, compiled formula vs fused op (what a training step sees);
  - each fused kernel alone against the compiled matmul + activation it replaces, for every
    candidate tile configuration (the op uses trainer/fused_mlp.py's `_CONFIG`);
and the error of both versions' output and gradients against an fp64 evaluation of the same
bf16 inputs, ||out - ref|| / ||ref||.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F
import triton

import trainer.fused_mlp as fused_mlp
from trainer.config import load_config

CANDIDATES = (
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=2),
    dict(BLOCK_M=256, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3),
)


def formula(x, w_fc, w_proj, slope):
    """The model's MLP without the fused op."""
    return F.linear(F.leaky_relu(F.linear(x, w_fc), slope).square(), w_proj)


def median_ms(fn, warmup=3, runs=20) -> float:
    for _ in range(warmup):  # the first calls compile
        fn()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def relative_error(value, reference) -> float:
    return ((value.double() - reference).norm() / reference.norm()).item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=98304)
    args = parser.parse_args()
    cfg = load_config({"PRESET": "record"})
    dim, hidden, slope = cfg.model_dim, int(cfg.mlp_mult * cfg.model_dim), cfg.leaky_relu_slope
    torch.manual_seed(0)
    x = torch.randn(args.rows, dim, device="cuda").bfloat16().requires_grad_()
    w_fc = (torch.randn(hidden, dim, device="cuda") / dim**0.5).bfloat16().requires_grad_()
    w_proj = (torch.randn(dim, hidden, device="cuda") / hidden**0.5).bfloat16().requires_grad_()
    grad_y = torch.randn(args.rows, dim, device="cuda").bfloat16()
    inputs = (x, w_fc, w_proj)

    # Each kernel against the compiled matmul + activation it replaces.
    xd, w_fc_d, w_proj_d = (t.detach() for t in inputs)
    h = torch.randn(args.rows, hidden, device="cuda").bfloat16()  # the backward reads it
    a, grad_h = torch.empty_like(h), torch.empty_like(h)
    up = torch.compile(lambda: F.leaky_relu(F.linear(xd, w_fc_d), slope).square(), dynamic=False)
    down = torch.compile(lambda: fused_mlp._backward_formula(grad_y, w_proj_d, h, slope), dynamic=False)
    print(f"\ncompiled: fc matmul + activation {median_ms(up):.3f} ms; "
          f"grad_y @ W_proj + activation backward {median_ms(down):.3f} ms")
    w_proj_t = w_proj_d.T.contiguous()
    shipped = fused_mlp._CONFIG
    for config in CANDIDATES:
        fused_mlp._CONFIG = config
        try:
            forward = median_ms(lambda: fused_mlp._matmul_activation(xd, w_fc_d, h, a, slope, backward=False))
            backward = median_ms(lambda: fused_mlp._matmul_activation(grad_y, w_proj_t, h, grad_h, slope,
                                                                       backward=True))
        except triton.runtime.errors.OutOfResources as exc:  # too much shared memory for this GPU
            print(f"fused {config}: {exc}")
            continue
        print(f"fused {config}: forward {forward:.3f} ms, backward {backward:.3f} ms")
    fused_mlp._CONFIG = shipped

    versions = {"compiled formula": torch.compile(formula, fullgraph=True, dynamic=False),
                "fused op": torch.compile(fused_mlp.leaky_relu2_mlp, fullgraph=True, dynamic=False)}
    outputs = {}
    for name, fn in versions.items():
        def step(fn=fn):
            y = fn(x, w_fc, w_proj, slope)
            return (y, *torch.autograd.grad(y, inputs, grad_y))
        print(f"{name:>17}: {median_ms(step):.3f} ms MLP forward + backward")
        outputs[name] = step()

    # fp64 reference from the same bf16 values, and each version's error against it.
    ref_inputs = [t.detach().double().requires_grad_() for t in inputs]
    ref_y = formula(*ref_inputs, slope)
    reference = (ref_y, *torch.autograd.grad(ref_y, ref_inputs, grad_y.double()))
    for name, values in outputs.items():
        errors = ", ".join(f"{label} {relative_error(v, r):.2e}"
                           for label, v, r in zip(("y", "dx", "dw_fc", "dw_proj"), values, reference))
        print(f"{name:>17}: error against fp64: {errors}")


if __name__ == "__main__":
    main()
