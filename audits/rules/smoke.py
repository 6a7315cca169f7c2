"""IMPORT_FAIL and IMPORT_STUB_LIMIT: the sandboxed CPU smoke import of the entry script."""

from __future__ import annotations

import weakref

from audits.registry import FAIL, NEEDS_ACTION, WARN, Rule, check, readme, rules
from audits.smoke import (
    run,  # the module, not its names: audits.smoke.run imports this package
)

RULES = rules(
    Rule("IMPORT_FAIL", FAIL, "python",
         "The script imports on a CPU box with GPU-only modules stubbed.",
         (readme("Submission Process, must compile and run"),),
         needs_option="smoke", level=NEEDS_ACTION),
    Rule("IMPORT_STUB_LIMIT", WARN, "python",
         "The import failed only because of a stubbed GPU-only module.",
         (readme("Submission Process, must compile and run"),),
         needs_option="smoke", level=NEEDS_ACTION),
)


# One smoke import per submission (and forward-pass setting) serves both rules.
_results: dict[tuple[int, bool], run.SmokeResult] = {}


def smoke_result(sub, options):
    if not options.smoke:
        return None
    key = (id(sub), options.smoke_forward)
    if key not in _results:
        _results[key] = run.run_smoke(sub, options)
        weakref.finalize(sub, _results.pop, key, None)
    return _results[key]


@check("IMPORT_FAIL")
def import_fail(sub, options):
    """What it checks: with `--smoke` (the default when torch is installed), the entry script
    (`train_gpt.py`, after unwrapping) is run as a module that is not `__main__` in a fresh process
    inside a sandbox: a temporary copy of the folder, no network, a scrubbed environment, limits on
    time, memory, processes, open files, output and disk, and FlashAttention, CUTLASS, other
    CUDA-only packages (mamba_ssm, causal_conv1d) and (when missing) Triton replaced by stubs. It
    runs on the target Python (`python3.10` for `--python 3.10`) when one with torch is installed,
    else on pgolf's own, and the finding then names the Python that ran it. A passing import is
    recorded as INFO `SMOKE_TEST_PASS` with the model's layers, width and vocabulary when they can
    be read from class attributes, the code bytes, the sandbox used, and the import time in its
    evidence.

    Why it matters: the README requires that the script "must compile and run" from inside the
    records folder; "does it even import?" is the first thing a reviewer checks on a CPU box.

    Illegal (FAIL): a SyntaxError; a NameError; an import of a package that is neither installed nor
    in requirements.txt.

    Legal: `from flash_attn_interface import flash_attn_varlen_func`; `@triton.jit` kernels and
    `@torch.library.custom_op` at module level; sibling modules of the folder; CUDA work inside
    `main()` under `if __name__ == "__main__":`.

    Known limits: WARN, not FAIL, for failures that may be this machine's (CUDA needed at import, a
    declared package not installed here, a sandbox limit hit, any other exception, and a syntax
    error that is only syntax newer than the Python that ran it, which PY_SYNTAX_TOO_NEW reports
    against the target). A script with no `__main__` guard that calls its own functions or loops at
    the top level is reported and not imported. A report counts only through the harness's own pipe
    with the run's nonce, so a script that writes a report of its own and exits is no pass; one that
    digs the nonce out of the harness's memory (it runs in the same process) could still forge one.
    Without bubblewrap the filesystem is the host's; without bubblewrap or unshare the network is
    too, and the finding says so; the writable space is a size-limited tmpfs only under bubblewrap
    or unshare. With `--no-smoke` (and in `pgolf package`, which imports nothing) the rule is "not
    checked", never a pass.
    """
    result = smoke_result(sub, options)
    if result is not None:
        yield from (f for f in result.findings if f.rule == "IMPORT_FAIL")


@check("IMPORT_STUB_LIMIT")
def import_stub_limit(sub, options):
    """What it checks: whether the smoke import failed at a name served by a stub for a GPU-only
    module (FlashAttention, CUTLASS extensions, Triton when it is not installed), and which name.

    Why it matters: a stub answers every attribute with a callable that also works as a decorator,
    which covers what record scripts do at import; a script that needs more (a version string, a
    real op registered by the extension) stops at the stub, and that is a limit of the CPU test,
    not a defect on H100.

    Illegal: nothing; this is a WARN so that a reviewer knows the import was not fully checked.

    Legal: `from flash_attn_interface import flash_attn_varlen_func`,
    `@triton.autotune(configs=[...], key=[...])`.

    Known limits: the cause is inferred from the traceback (a frame in the stub, an attribute of a
    stubbed module, or an error that names a stubbed package after the script used one).
    """
    result = smoke_result(sub, options)
    if result is not None:
        yield from (f for f in result.findings if f.rule == "IMPORT_STUB_LIMIT")
