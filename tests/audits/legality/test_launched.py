"""The run starts where its logs and commands say: a script beside the entry that no run starts
(a research probe, an ablation's evaluation) weighs as a side script, whichever rule it breaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import audit_findings, by_rule, record_log, submission_json, write_folder

LEGALITY = Path(__file__).parents[2] / "fixtures" / "legality"
# a clean training script, and a probe that mixes a cache with a weight read at the scored token
CLEAN = (LEGALITY / "realized_token_gate" / "gate_from_context.py").read_text()
PROBE = (LEGALITY / "realized_token_gate" / "gate_alpha_lookup.py").read_text().replace(
    "    with torch.no_grad():\n", "    with torch.inference_mode():\n")


def _folder(tmp_path, readme="# Run\n", embed=None, **extra):
    files = {"README.md": readme, "train_lm.py": CLEAN, "probe_cache.py": PROBE,
             "submission.json": submission_json(1.0810), **extra}
    for seed in (42, 314, 999):
        log = record_log(seed, bpb=1.0810)
        files[f"train_seed{seed}.log"] = (embed + "\n" + "=" * 100 + "\n" + log) if embed else log
    return write_folder(tmp_path / "2026-05-01_Run", files)


def _gate(folder):
    return {str(f.severity) for f in by_rule(audit_findings(folder), "REALIZED_TOKEN_GATE")}


@pytest.mark.parametrize("how", [
    {"readme": "# Run\n\n```\nSEED=42 torchrun --standalone --nproc_per_node=8 records/x/train_lm.py\n```\n"},
    {"readme": "# Run\n\nResearch only: `python probe_cache.py`.\n",
     "run.sh": "#!/bin/bash\nfor s in 42 314 999; do SEED=$s torchrun --nproc_per_node=8 train_lm.py; done\n"},
    {"embed": CLEAN.rstrip("\n")},  # the logs embed the source that ran
])
def test_a_probe_no_run_starts_is_a_side_script(tmp_path, how):
    assert "FAIL" not in _gate(_folder(tmp_path, **how))


@pytest.mark.parametrize("how", [
    {"readme": "# Run\n\n```\ntorchrun --standalone --nproc_per_node=8 probe_cache.py\n```\n"},
    {"embed": PROBE.rstrip("\n")},
    {},  # nothing says which ran: every top-level script is an entry
])
def test_the_script_the_runs_start_is_judged_as_run(tmp_path, how):
    assert "FAIL" in _gate(_folder(tmp_path, **how))
