"""Helpers for tests: records folders on disk, realistic train logs in the challenge's formats,
the smoke sandboxes of this machine and the processes a smoke import left behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

from audits.smoke import isolation

FIXTURES = Path(__file__).parent / "fixtures" / "records" / "track_10min_16mb"


def write_folder(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create `root` holding `files` (relative path -> text or bytes)."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def record_log(seed: int, *, bpb: float = 1.08079352, loss: float = 2.79180191,
               train_ms: int = 588047, steps: int = 4550, model_bytes: int = 15975300,
               code_bytes: int = 16630, phases=(("quantized", 25515), ("quantized_sliding_window", 120961),
                                               ("quantized_ttt", 366525)),
               reserve_s: float | None = 12.0, hessian_s: float | None = 8.0,
               val_tokens: int = 40540160, dataset: str = "fineweb10B_sp8192",
               total_eval_s: float | None = None, code_sha256: str | None = None,
               complete: bool = True) -> str:
    """A log shaped like the 2026-04-09 record's, with the given figures."""
    lines = ["Hyperparameters:", f"  datasets_dir: ./data/datasets/{dataset}", f"  seed: {seed}",
             "  world_size: 8", "train_shards: 128", f"val_tokens: {val_tokens}", "model_params:35944536"]
    if code_sha256:
        lines.append(f"code_sha256: {code_sha256}")
    if reserve_s is not None:
        lines.append(f"gptq:reserving {reserve_s:g}s, effective={600000 - int(reserve_s * 1000)}ms")
    lines += ["0/20000 val_loss: 9.0090 val_bpb: 3.4877",
              "1/20000 train_loss: 9.0111 train_time: 0.0m tok/s: 8348323",
              f"{steps}/20000 val_loss: 2.8119 val_bpb: 1.0886",
              f"stopping_early: wallclock_cap train_time: {train_ms}ms step: {steps}/20000",
              "peak memory allocated: 39045 MiB reserved: 39124 MiB",
              "pre-quantization post-ema val_loss:2.80873254 val_bpb:1.08734790 eval_time:7440ms",
              "Serialized model: 135431033 bytes", f"Code size: {code_bytes} bytes"]
    if not complete:
        return "\n".join(lines) + "\n"
    if hessian_s is not None:
        lines.append(f"GPTQ:collected 67 Hessians in {hessian_s}s")
    lines += [f"Serialized model quantized+brotli: {model_bytes} bytes",
              f"Total submission size quantized+brotli: {model_bytes + code_bytes} bytes"]
    for name, ms in phases:
        lines.append(f"{name} val_loss:{loss:.8f} val_bpb:{bpb:.8f} eval_time:{ms}ms")
    if total_eval_s is not None:
        lines.append(f"total_eval_time:{total_eval_s:.1f}s")
    return "\n".join(lines) + "\n"


def submission_json(bpb: float, **extra) -> str:
    data = {"author": "Ada", "github_id": "ada", "name": "Test run", "date": "2026-04-09",
            "val_bpb": bpb, **extra}
    return json.dumps(data, indent=2)


def good_folder_files(seeds=(42, 314, 999), bpbs=(1.0810, 1.0812, 1.0808)) -> dict[str, str]:
    """A records folder that passes every log-level rule (the script is a plain small file)."""
    files = {"README.md": "# Test run\n", "train_gpt.py": "import torch\n\nif __name__ == '__main__':\n    pass\n"}
    for seed, bpb in zip(seeds, bpbs):
        files[f"train_seed{seed}.log"] = record_log(seed, bpb=bpb)
    files["submission.json"] = submission_json(round(sum(bpbs) / len(bpbs), 8))
    return files


def audit_findings(folder, **options):
    """All findings of auditing one folder with the given AuditOptions fields."""
    from audits import api
    from audits.context import AuditOptions

    report = api.audit([str(folder)], AuditOptions(**options))
    return report.submissions[0].findings


def by_rule(findings, rule, severity=None):
    return [f for f in findings if f.rule == rule and (severity is None or str(f.severity) == severity)]


SANDBOXES = isolation.sandboxes()  # every level that works here, best first


def processes_with(text: str) -> list[int]:
    """Pids of live processes whose command line contains `text`."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                pids.append(int(entry.name))
    return pids


def smoke_processes(result) -> list[int]:
    """Pids of live processes that one smoke import started. Each names that import's own
    temporary folder on its command line, so imports run by anything else on this machine (another
    test session, say) are not counted."""
    return processes_with(f"{Path(result.folder_path).parents[1]}/")
