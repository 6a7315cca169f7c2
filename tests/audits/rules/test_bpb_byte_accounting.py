"""BPB_BYTE_ACCOUNTING on a submission that counts bytes from a per-token byte sidecar (CaseOps)."""

from support import audit_findings, by_rule, good_folder_files, write_folder

RULE = "BPB_BYTE_ACCOUNTING"

SIDECAR_SCRIPT = '''"""Scores in bits per byte of the original text: its validation shards hold CaseOps tokens, and
fineweb_val_bytes_*.bin the bytes each token stands for."""
import glob
import math

import numpy as np
import torch


def load_val_bytes(folder):
    # one uint16 per validation token, after the shard header
    files = sorted(glob.glob(f"{folder}/fineweb_val_bytes_*.bin"))
    return torch.from_numpy(np.concatenate([np.fromfile(f, dtype=np.uint16, offset=1024)
                                            for f in files]).astype(np.int64))


def bits_per_byte(nll_sum, target_pos, val_bytes):
    return nll_sum / math.log(2) / val_bytes[target_pos].sum()


if __name__ == "__main__":
    print(bits_per_byte(torch.tensor(10.0), torch.arange(1, 4), load_val_bytes("./data")))
'''


def _audit(tmp_path, script):
    files = good_folder_files()
    files["train_gpt.py"] = script
    return by_rule(audit_findings(write_folder(tmp_path / "2026-04-20_CaseOps", files),
                                  only=frozenset({RULE})), RULE)


def test_a_byte_sidecar_is_recognised_where_the_code_names_it(tmp_path):
    [finding] = _audit(tmp_path, SIDECAR_SCRIPT)
    assert str(finding.severity) == "INFO" and finding.file == "train_gpt.py" and finding.line == 12
    assert "names the per-token byte sidecar" in finding.message
    assert finding.evidence == '12: files = sorted(glob.glob(f"{folder}/fineweb_val_bytes_*.bin"))'


def test_a_sidecar_named_only_in_comments_and_docstrings_is_not(tmp_path):
    script = SIDECAR_SCRIPT.replace('f"{folder}/fineweb_val_bytes_*.bin"', 'f"{folder}/fineweb_val_*.bin"')
    assert "fineweb_val_bytes_" in script  # still in the module's docstring
    script += '# fineweb_val_bytes_000000.bin: see the README\n"read" f" fineweb_val_bytes_{0}"\n'
    assert _audit(tmp_path, script) == []
