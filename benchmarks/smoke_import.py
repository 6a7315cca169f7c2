"""Time `pgolf audit --smoke` on a record-sized script: about 1,500 lines, imports torch, defines
an 11-layer GPT, a Triton kernel and a custom op at module level.

The script is the record-shaped test fixture plus generated quantization helpers (the bulk of
real record scripts), so its size matches the records without copying any of them.

    python -m benchmarks.smoke_import [--runs N]

Prints the script's size, then for each run the wall time of the whole `pgolf audit` command and
the import time the SMOKE_TEST_PASS finding reports.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECORD = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "smoke" / "record" / "train_gpt.py"
TARGET_LINES = 1500

HELPERS = '''

def quantize_int{bits}_g{group}(t: Tensor) -> tuple[Tensor, Tensor]:
    """Symmetric int{bits} quantization of a matrix in groups of {group} columns."""
    rows, cols = t.shape
    pad = (-cols) % {group}
    if pad:
        t = F.pad(t, (0, pad))
    groups = t.float().reshape(rows, -1, {group})
    scale = groups.abs().amax(dim=-1, keepdim=True).clamp_min(1e-8) / {qmax}
    q = torch.clamp(torch.round(groups / scale), -{qmax}, {qmax}).to(torch.int8)
    return q.reshape(rows, -1)[:, :cols].contiguous(), scale.squeeze(-1).half()


def dequantize_int{bits}_g{group}(q: Tensor, scale: Tensor) -> Tensor:
    rows, cols = q.shape
    pad = (-cols) % {group}
    if pad:
        q = F.pad(q, (0, pad))
    groups = q.float().reshape(rows, -1, {group}) * scale.float()[..., None]
    return groups.reshape(rows, -1)[:, :cols]


def roundtrip_error_int{bits}_g{group}(t: Tensor) -> float:
    q, scale = quantize_int{bits}_g{group}(t)
    return (dequantize_int{bits}_g{group}(q, scale) - t.float()).pow(2).mean().item()
'''


def record_sized_script() -> str:
    head, guard = RECORD.read_text().rsplit('\nif __name__ == "__main__":', 1)
    parts = [head]
    for bits in range(2, 9):
        for group in (16, 24, 32, 48, 64, 96, 128, 192, 256, 512):
            if sum(p.count("\n") for p in parts) >= TARGET_LINES - 5:
                break
            parts.append(HELPERS.format(bits=bits, group=group, qmax=2 ** (bits - 1) - 1))
    return "".join(parts) + '\n\nif __name__ == "__main__":' + guard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "records" / "track_10min_16mb" / "2026-01-01_RecordSized"
        folder.mkdir(parents=True)
        script = record_sized_script()
        (folder / "train_gpt.py").write_text(script)
        print(f"script: {script.count(chr(10))} lines, {len(script.encode()):,} bytes")
        command = [sys.executable, "-c", "from pgolf_cli.main import main; main()", "audit", str(folder),
                   "--only", "IMPORT_FAIL,IMPORT_STUB_LIMIT", "--format", "json"]
        for run in range(1, args.runs + 1):
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            wall = time.perf_counter() - start
            findings = json.loads(done.stdout)["submissions"][0]["findings"]
            print(f"run {run}: pgolf audit {wall:.2f} s wall; " + "; ".join(f["message"] for f in findings))


if __name__ == "__main__":
    main()
