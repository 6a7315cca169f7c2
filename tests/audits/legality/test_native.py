"""Loops the interpreter does not read: native code the run loads (a shipped C file, C embedded in
a string) and Python loops over gathered arrays. Real audits of folders written here."""

from __future__ import annotations

import pytest

from support import audit_findings, by_rule, good_folder_files, record_log, write_folder

GOOD = "2026-04-09_Native_Run"

# A hint per position from an online table; `gate` on the position's own token decides the hint.
HINTS_C = """\
#include <stdint.h>
static void push(int *state, uint16_t tok) { state[0] = tok; }
int hints(int *state, const uint16_t *tokens, long n, const uint8_t *boundary_lut,
          float *hint_prob) {
    for (long i = 0; i < n; ++i) {
        const uint16_t tok = tokens[i];
        const uint8_t is_boundary = boundary_lut[tok];
        {PUSH_BEFORE}
        if (!is_boundary && state[0] > 0) {
            hint_prob[i] = 0.5f;  /* the hint for position i */
        } else {
            hint_prob[i] = 0.0f;
        }
        {PUSH_AFTER}
    }
    return 0;
}
"""

LOADER = """\
import ctypes
import numpy as np


def build_hints(targets):
    lib = ctypes.CDLL("./libhints.so")  # built from hints.c
    out = np.zeros(len(targets), dtype=np.float32)
    lib.hints(None, targets.ctypes.data, len(targets), None, out.ctypes.data)
    return out
"""

ENTRY = """\
import numpy as np
from hints import build_hints


def evaluate(val_tokens):
    return build_hints(val_tokens[1:])


if __name__ == "__main__":
    evaluate(np.zeros(10, dtype=np.uint16))
"""


def _folder(tmp_path, files):
    return write_folder(tmp_path / GOOD, {**good_folder_files(), **files})


@pytest.mark.parametrize("order, fails", [("after", True), ("before", False)])
def test_a_gate_in_shipped_c_on_the_position_own_token(tmp_path, order, fails):
    code = HINTS_C.replace("{PUSH_AFTER}" if order == "after" else "{PUSH_BEFORE}", "push(state, tok);")
    code = code.replace("{PUSH_AFTER}", "").replace("{PUSH_BEFORE}", "")
    f = by_rule(audit_findings(_folder(tmp_path, {"train_gpt.py": ENTRY, "hints.py": LOADER, "hints.c": code})),
                "REALIZED_TOKEN_GATE", "FAIL")
    if not fails:  # the token entered the state first: the hint is for the next position
        assert f == []
        return
    gate_line = code.splitlines().index("        if (!is_boundary && state[0] > 0) {") + 1
    assert [(x.file, x.line) for x in f] == [("hints.c", gate_line)]
    assert "line 6" in f[0].message  # where the token is read at the position


def test_c_that_no_script_loads_is_not_read(tmp_path):
    code = HINTS_C.replace("{PUSH_AFTER}", "push(state, tok);").replace("{PUSH_BEFORE}", "")
    loader = LOADER.replace('ctypes.CDLL("./libhints.so")', "None")
    f = audit_findings(_folder(tmp_path, {"train_gpt.py": ENTRY, "hints.py": loader, "hints.c": code}))
    assert by_rule(f, "REALIZED_TOKEN_GATE") == []


EMBEDDED = '''\
import ctypes
import numpy as np

CODE = r"""
#include <math.h>
int score(const long *target, const double *nll, long n, const int *lens, double lam, double *out) {
    for (long i = 0; i < n; i++) {
        int tid = (int)target[i];
        int nb = lens[tid];
        double nn_logp = -nll[i] / (double)nb;
        for (int j = 0; j < nb; j++) {
            double a = log(lam) + nn_logp, c = log(1.0 - lam) - 5.5;
            out[0] -= log(exp(a) + exp(c));
        }
    }
    return 0;
}
"""


def mixture(targets, nll):
    lib = ctypes.CDLL(compile_it(CODE))
    return lib.score(targets, nll)


def compile_it(code):
    return "./score.so"


if __name__ == "__main__":
    mixture(np.zeros(4), np.zeros(4))
'''


def test_c_embedded_in_a_string_spreads_the_token_loss_over_its_bytes(tmp_path):
    f = by_rule(audit_findings(_folder(tmp_path, {"train_gpt.py": EMBEDDED})), "BYTE_MIXTURE_NOT_NORMALIZED", "FAIL")
    division = EMBEDDED.splitlines().index("        double nn_logp = -nll[i] / (double)nb;") + 1
    assert [(x.file, x.line) for x in f] == [("train_gpt.py", division)] and "C loop" in f[0].message


POST_HOC = '''\
import math


def byte_mix(target_ids, nll_nats, token_bytes_lut, lam=0.9):
    total = 0.0
    for i in range(len(target_ids)):
        tid = int(target_ids[i])
        n_bytes = len(token_bytes_lut[tid])
        per_byte = -float(nll_nats[i]) / n_bytes
        for b in token_bytes_lut[tid]:
            a, c = math.log(lam) + per_byte, math.log(1.0 - lam) - math.log(256)
            total -= max(a, c) + math.log1p(math.exp(-abs(a - c)))
    return total


def per_token_bpb(target_ids, nll_nats, token_bytes_lut):
    out = []
    for i in range(len(target_ids)):
        tid = int(target_ids[i])
        out.append(float(nll_nats[i]) / len(token_bytes_lut[tid]) / math.log(2))
    return out


if __name__ == "__main__":
    print(CALLS)
'''


@pytest.mark.parametrize("calls, fails", [("byte_mix([1], [0.5], [b'a'])", True),
                                          ("per_token_bpb([1], [0.5], [b'a'])", False),
                                          ("0", False)])
def test_a_mixture_on_gathered_arrays_in_python(tmp_path, calls, fails):
    source = POST_HOC.replace("CALLS", calls)
    f = by_rule(audit_findings(_folder(tmp_path, {"train_gpt.py": source})), "BYTE_MIXTURE_NOT_NORMALIZED", "FAIL")
    division = source.splitlines().index("        per_byte = -float(nll_nats[i]) / n_bytes") + 1
    assert [x.line for x in f] == ([division] if fails else [])


def _gated_c():
    return HINTS_C.replace("{PUSH_AFTER}", "push(state, tok);").replace("{PUSH_BEFORE}", "")


@pytest.mark.parametrize("counts, launch, fails", [
    ((0, 0, 0), None, False),  # every run's log counts the channel's hints at 0
    ((0, 7, 0), None, True),  # one run used it
    (None, "HINT_BOOST=0 torchrun --nproc_per_node=8 train_gpt.py\n", False),  # launched with it off
    (None, "HINT_BOOST=0.5 torchrun --nproc_per_node=8 train_gpt.py\n", True),
    (None, None, True),  # nothing shows it off
])
def test_a_native_channel_the_runs_had_off_is_a_note(tmp_path, counts, launch, fails):
    """The gate decides `hint_prob[i]`; where the runs show that channel off (a counter of its
    hints at 0 in every log, a launch line setting its boost to 0), the reading is a note."""
    files = good_folder_files()
    logs = sorted(name for name in files if name.endswith(".log"))
    for name, count in zip(logs, counts or ()):
        files[name] += f"hints total=4096 token_gate=311 hint_gate={count}\n"
    if launch is not None:
        files["run.sh"] = launch
    folder = write_folder(tmp_path / GOOD, {**files, "train_gpt.py": ENTRY, "hints.py": LOADER,
                                            "hints.c": _gated_c()})
    gates = by_rule(audit_findings(folder), "REALIZED_TOKEN_GATE")
    assert len(gates) == 1
    assert (str(gates[0].severity) == "FAIL") == fails, gates[0].message
    if not fails:
        assert "channel off" in gates[0].message


@pytest.mark.parametrize("claimed, earlier, fails", [
    (0, 7, False),  # the scored runs had the channel off; an earlier run beside them had it on
    (7, 0, True),  # the scored runs used it
])
def test_the_channel_is_judged_on_the_runs_whose_scores_are_claimed(tmp_path, claimed, earlier, fails):
    files = good_folder_files()
    for name in [n for n in files if n.endswith(".log")]:
        files[name] += f"hints total=4096 token_gate=311 hint_gate={claimed}\n"
    files["train_seed42_before_fix.log"] = record_log(42, bpb=1.0650) + (
        f"hints total=4096 token_gate=311 hint_gate={earlier}\n")
    folder = write_folder(tmp_path / GOOD, {**files, "train_gpt.py": ENTRY, "hints.py": LOADER,
                                            "hints.c": _gated_c()})
    gates = by_rule(audit_findings(folder), "REALIZED_TOKEN_GATE")
    assert len(gates) == 1
    assert (str(gates[0].severity) == "FAIL") == fails, gates[0].message
