"""Where a legality finding points: the line that shows the violation, not a line that only
follows from it."""

from pathlib import Path

from support import audit_findings, by_rule, good_folder_files, write_folder

# The answer-keyed key is made in one pass over the orders and read in a second one, many lines
# later: the key line is what shows the target in the key.
KEYS_THEN_READS = '''import glob

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

PRIMES = np.array([1000003, 998244353, 19260817], dtype=np.int64)


def tokens(pattern):
    shards = [np.fromfile(f, dtype=np.uint16, offset=1024) for f in sorted(glob.glob(pattern))]
    return np.concatenate(shards).astype(np.int64)


class LM(nn.Module):
    def __init__(self, vocab=1024, d=64):
        super().__init__()
        self.e = nn.Embedding(vocab, d)
        self.f = nn.Linear(d, vocab)

    def forward(self, x):
        return self.f(torch.tanh(self.e(x)))


def eval_cache(model, val_np, seq=256, alpha=0.3):
    mask = (1 << 20) - 1
    ctx_counts = np.zeros(1 << 20)
    full_counts = np.zeros(1 << 20)
    loss_sum, n = 0.0, 0
    for s in range(2, len(val_np) - seq - 1, seq):
        x = torch.from_numpy(val_np[s:s + seq])
        y = torch.from_numpy(val_np[s + 1:s + seq + 1])
        with torch.no_grad():
            nll = F.cross_entropy(model(x), y, reduction="none").double().numpy()
        tgt = y.numpy()
        keys = []
        for k in range(1, 3):
            ctx = val_np[s + 1 - k:s + seq + 1 - k] * PRIMES[k]
            keys.append((ctx & mask, (ctx ^ (tgt * PRIMES[0])) & mask))
        # the model's probability first
        p_model = np.exp(-nll)
        # a few lines of bookkeeping between the keys and their reads
        best = np.zeros(seq)
        seen = np.zeros(seq, dtype=bool)
        weight = np.full(seq, alpha)
        weight = np.clip(weight, 0.0, 1.0)
        order_used = np.zeros(seq, dtype=np.int64)
        note = "orders"
        del note
        for ctx_key, full_key in reversed(keys):
            p = full_counts[full_key] / np.maximum(ctx_counts[ctx_key], 1.0)
            best = np.where(seen, best, p)
            seen |= ctx_counts[ctx_key] > 0
            order_used += 1
        p_mix = (1 - weight) * p_model + weight * best
        loss_sum += float(-np.log(p_mix).sum())
        n += seq
    return loss_sum / n


def main():
    model = LM()
    print("val_loss", eval_cache(model, tokens("./data/fineweb10B_sp1024/fineweb_val_*.bin")))


if __name__ == "__main__":
    main()
'''


def test_answer_keyed_table_finding_names_the_line_that_hashes_the_target_into_the_key(tmp_path):
    files = good_folder_files()
    files["train_gpt.py"] = KEYS_THEN_READS
    folder = write_folder(tmp_path / "2026-05-01_Keys_Then_Reads", files)
    lines = KEYS_THEN_READS.split("\n")
    key_line = 1 + next(i for i, text in enumerate(lines) if "tgt * PRIMES[0]" in text)
    read_line = 1 + next(i for i, text in enumerate(lines) if "full_counts[full_key] /" in text)
    assert read_line - key_line > 10  # far enough apart that the two places differ
    [finding] = by_rule(audit_findings(folder), "NGRAM_TARGET_IN_KEY", "FAIL")
    assert (finding.file, finding.line) == ("train_gpt.py", key_line)
    assert f"the table read at line {read_line} " in finding.message
    assert f"its key takes the scored token at line {key_line}" in finding.message
    assert finding.evidence.startswith(f"{key_line}: ")
    assert f"\n{read_line}: " in finding.evidence


# A Hessian collector that is legal on training batches; the call that hands it the validation
# tokens, many lines later, is what makes the calibration illegal.
COLLECTOR = '''def collect_hessians(model, tokens, batches=8, seq=128):
    grams = {}
    hooks = []
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):
            def hook(m, inputs, output, key=name):
                x = inputs[0].reshape(-1, inputs[0].shape[-1]).float()
                grams[key] = grams.get(key, 0) + x.T @ x
            hooks.append(mod.register_forward_hook(hook))
    with torch.no_grad():
        for b in range(batches):
            model(tokens[b * seq:(b + 1) * seq][None])
    for h in hooks:
        h.remove()
    return grams
'''

CALLER = '''import glob

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

''' + COLLECTOR + '''

def load(pattern):
    return torch.from_numpy(np.concatenate([np.fromfile(f, dtype=np.uint16, offset=1024)
                                            for f in sorted(glob.glob(pattern))]).astype(np.int64))


class LM(nn.Module):
    def __init__(self, vocab=1024, d=64):
        super().__init__()
        self.e = nn.Embedding(vocab, d)
        self.f = nn.Linear(d, vocab)

    def forward(self, x):
        return self.f(torch.tanh(self.e(x)))


def main():
    model = LM()
    train = load("./data/fineweb10B_sp1024/fineweb_train_*.bin")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(100):
        seg = train[step * 128:(step + 1) * 128 + 1]
        opt.zero_grad()
        F.cross_entropy(model(seg[:-1]), seg[1:]).backward()
        opt.step()
    val = load("./data/fineweb10B_sp1024/fineweb_val_*.bin")
    grams = collect_hessians(model, val)
    torch.save({"model": model.state_dict(), "grams": grams}, "final_model.pt")


if __name__ == "__main__":
    main()
'''


def test_calibration_on_validation_names_the_call_that_passes_the_validation_tokens_in(tmp_path):
    files = good_folder_files()
    files["train_gpt.py"] = CALLER
    folder = write_folder(tmp_path / "2026-05-01_Calib_Call", files)
    call_line = 1 + CALLER.split("\n").index("    grams = collect_hessians(model, val)")
    forward_line = 1 + CALLER.split("\n").index("            model(tokens[b * seq:(b + 1) * seq][None])")
    [finding] = by_rule(audit_findings(folder), "GPTQ_CALIB_ON_VAL", "FAIL")
    assert (finding.file, finding.line) == ("train_gpt.py", call_line)
    assert f"passed in by the call at line {call_line}" in finding.message
    assert finding.evidence.startswith(f"{call_line}: ")
    assert f"\n{forward_line}: " in finding.evidence  # the forward pass that runs on them


# The stored answers come back in a loader; the scoring loop compares them with the target many
# lines later. The decompression shows what the artifact holds; the comparison stays in evidence.
STORED_ANSWERS = (Path(__file__).parents[2] / "fixtures" / "legality" / "paid_prefix"
                  / "paid_prefix_stored_answers.py").read_text(encoding="utf-8")


def test_answers_read_from_the_artifact_name_where_the_blob_is_decompressed(tmp_path):
    files = good_folder_files()
    files["train_gpt.py"] = STORED_ANSWERS
    folder = write_folder(tmp_path / "2026-05-01_Stored_Answers", files)
    lines = STORED_ANSWERS.split("\n")
    unpack = 1 + next(i for i, s in enumerate(lines) if "lzma.decompress(" in s)
    compare = 1 + next(i for i, s in enumerate(lines) if "== y[:n]" in s)
    [finding] = by_rule(audit_findings(folder), "PAID_PREFIX", "FAIL")
    assert (finding.file, finding.line) == ("train_gpt.py", unpack)
    assert f"compared at line {compare}" in finding.message
    assert f"decompressed at line {unpack}" in finding.message
    assert finding.evidence.startswith(f"{unpack}: ") and f"\n{compare}: " in finding.evidence
