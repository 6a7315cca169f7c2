"""BPB_BYTE_ACCOUNTING on a submission that counts bytes from a per-token byte sidecar (CaseOps)."""

from support import audit_findings, by_rule, good_folder_files, record_log, write_folder

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


CASEOPS = "fineweb10B_sp8192_lossless_caps_caseops_v1_reserved"

PIECES_SCRIPT = '''import glob
import math

import numpy as np
import sentencepiece as spm
import torch


def piece_lengths(sp):
    out = np.zeros(sp.vocab_size(), dtype=np.int64)
    for i in range(sp.vocab_size()):
        out[i] = 1 if sp.is_byte(i) else len(sp.id_to_piece(i).lstrip("\\u2581").encode())
    return torch.from_numpy(out)


def bits_per_byte(nll_sum, targets, lengths):
    return nll_sum / math.log(2) / lengths[targets].sum()


if __name__ == "__main__":
    sp = spm.SentencePieceProcessor(model_file="./tok.model")
    print(bits_per_byte(torch.tensor(10.0), torch.arange(1, 4), piece_lengths(sp)))
'''


def _caseops_audit(tmp_path, files):
    folder = good_folder_files()
    folder.update(files)
    return [f for f in by_rule(audit_findings(write_folder(tmp_path / "2026-04-20_CaseOps", folder),
                                              only=frozenset({RULE})), RULE) if str(f.severity) != "INFO"]


def _caseops_logs():
    return {f"train_seed{seed}.log": record_log(seed, dataset=CASEOPS) for seed in (42, 314, 999)}


def test_caseops_tokens_scored_with_no_byte_sidecar_in_sight_fail(tmp_path):
    # the logs' dataset is the CaseOps export; the code counts bytes from the pieces alone
    [finding] = _caseops_audit(tmp_path, {"train_gpt.py": PIECES_SCRIPT, **_caseops_logs()})
    assert str(finding.severity) == "FAIL" and finding.file == "train_seed314.log" and finding.line == 2
    assert CASEOPS in finding.message and "transformed pieces" in finding.message


def test_caseops_tokens_with_the_sidecar_read_or_shown_in_the_logs_pass(tmp_path):
    assert _caseops_audit(tmp_path, {"train_gpt.py": SIDECAR_SCRIPT, **_caseops_logs()}) == []
    logs = {name: text.replace("  seed:", f"  val_bytes_files: ./data/datasets/{CASEOPS}/fineweb_val_bytes_*.bin\n"
                                          "  seed:") for name, text in _caseops_logs().items()}
    assert _caseops_audit(tmp_path / "logs", {"train_gpt.py": PIECES_SCRIPT, **logs}) == []


def test_a_caseops_data_path_in_a_sibling_module_with_no_sidecar_warns(tmp_path):
    # no log says which data ran: the path the run's code reads (from a module it imports) does
    script = "from where import DATA\n" + PIECES_SCRIPT.replace('"./tok.model"', 'DATA + "/tok.model"')
    files = {"train_gpt.py": script, "where.py": f'import os\n\nDATA = os.path.join("./data", "{CASEOPS}")\n'}
    folder = good_folder_files()
    folder = {name: text for name, text in folder.items() if not name.endswith(".log")}
    folder.update(files)
    found = [f for f in by_rule(audit_findings(write_folder(tmp_path / "2026-04-20_CaseOps", folder),
                                               only=frozenset({RULE})), RULE) if str(f.severity) != "INFO"]
    [finding] = found
    assert str(finding.severity) == "WARN" and finding.file == "where.py" and finding.line == 3


def test_caseops_named_only_in_prose_or_on_plain_data_is_quiet(tmp_path):
    script = '"""Unlike the fineweb10B_sp8192_caseops runs, this one reads plain text."""\n' + PIECES_SCRIPT
    assert _caseops_audit(tmp_path, {"train_gpt.py": script}) == []


def test_the_caseops_token_count_under_a_plain_folder_name_is_caseops(tmp_path):
    # the transform adds tokens: 47,851,520 is the CaseOps split whatever the folder is called
    logs = {f"train_seed{seed}.log": record_log(seed, val_tokens=47_851_520) for seed in (42, 314, 999)}
    found = [f for f in _caseops_audit(tmp_path, {"train_gpt.py": PIECES_SCRIPT, **logs})
             if "transformed" in f.message]
    [finding] = found
    assert str(finding.severity) == "FAIL" and finding.line == 6 and "47,851,520" in finding.message
    plain = {f"train_seed{seed}.log": record_log(seed) for seed in (42, 314, 999)}  # the sp8192 split
    assert _caseops_audit(tmp_path / "plain", {"train_gpt.py": PIECES_SCRIPT, **plain}) == []
