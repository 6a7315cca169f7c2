"""IMPORT_FAIL and IMPORT_STUB_LIMIT: the sandboxed CPU smoke import of the entry script."""

from __future__ import annotations

import errno
import importlib.util
import sys
import weakref

from audits import pyversion
from audits.findings import Finding, Severity
from audits.registry import FAIL, NEEDS_ACTION, WARN, Rule, check, found, readme, rules
from audits.smoke import (
    isolation,
    run,  # the module, not its names: audits.smoke.run imports this package
)
from audits.submission import Script, Submission
from audits.submission.imports import DISTRIBUTIONS, REFERENCE, normalize

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
        _results[key] = smoke_import(sub, options)
        weakref.finalize(sub, _results.pop, key, None)
    return _results[key]


def sandbox_used(sub, options):
    """The sandbox the smoke import of `sub` ran in (an isolation.Sandbox), None where no import
    ran: --no-smoke, no script, not imported, skipped, or stopped by the audit's time limit first."""
    result = _results.get((id(sub), options.smoke_forward)) if options.smoke else None
    return result.sandbox if result is not None and result.outcome in ("pass", "error", "stopped") else None


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
    too, and the finding says so; the writable space is a tmpfs bounded in size and inodes only
    under bubblewrap or unshare. Memory is bounded for the whole process tree only where pgolf can
    make a cgroup (v2, with the memory controller: root, or a container's own hierarchy);
    elsewhere it is bounded per process and the tree by the process limit, and the finding says
    so. With `--no-smoke` (and in `pgolf package`, which imports nothing), and where no
    Python here has torch (the import is then skipped, and the finding says so), the rule is "not
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


def smoke_import(sub, options, **kwargs) -> run.SmokeResult:
    """The smoke import of `sub` (audits.smoke.run.run_smoke, with its keyword arguments), and its
    findings in words; skipped, and said so, where no Python here has torch (`pip install pgolf`
    without the train extra): the import would only fail at `import torch`."""
    script = run.entry_script(sub)
    if script is not None and not _python_with_torch(options.target_python):
        result = run.SmokeResult(script.rel, "skipped")
        result.findings = [found("IMPORT_FAIL", "not checked: the smoke import was skipped: no Python "
                                 "with torch is installed here", severity=Severity.INFO,
                                 unchecked=True, file=script.rel,
                                 hint="Install torch (pip install 'pgolf[train]') to run it.")]
        return result
    result = run.run_smoke(sub, options, **kwargs)
    result.findings = findings(result, sub, run.entry_script(sub))
    return result


def _python_with_torch(target: tuple[int, int]) -> bool:
    """Whether the Python that would run the import (the target's when it has torch, else pgolf's
    own) can import torch."""
    if isolation.interpreter(target).path != sys.executable:
        return True  # the target's Python, chosen because it has torch
    return importlib.util.find_spec("torch") is not None


PASSED = "SMOKE_TEST_PASS"  # how the INFO of an import that worked begins
_NOT_A_DEFECT = "not counted as a defect: only syntax errors, undefined names and undeclared modules are"


def findings(result, sub: Submission, script: Script | None) -> list[Finding]:
    """Turn what the smoke import did into IMPORT_FAIL and IMPORT_STUB_LIMIT findings.

    Only three failures are the submission's own defects, and FAIL: a syntax error, an undefined
    name, and a module that is neither installed nor declared (requirements.txt or the reference
    environment). A syntax error that is only newer syntax than the Python that ran the import is
    a WARN: PY_SYNTAX_TOO_NEW reports that syntax against the target. A failure at a stubbed
    GPU-only name is IMPORT_STUB_LIMIT (WARN). Anything else (CUDA work at import, a declared
    package missing here, a sandbox limit) is a WARN under IMPORT_FAIL that says why it is not
    counted as a defect.
    """
    if result.outcome == "no_script":
        return []
    tag = _sandbox_tag(result)
    if result.outcome == "not_imported":
        line, what = result.not_imported
        return [found("IMPORT_FAIL", f"not imported: {script.rel} has no `if __name__ == \"__main__\":` "
                      f"guard and {what}, so importing it would start training",
                      severity=Severity.WARN, file=script.rel, line=line, via=script.via(line),
                      evidence=_line(script.source, line),
                      hint="Put the entry point under `if __name__ == \"__main__\":` so that the script "
                           "imports without running.")]
    out = []
    if result.folder_changes:
        out.append(found("IMPORT_FAIL", "the import changed the original folder: "
                         + ", ".join(result.folder_changes[:10]) + f" {tag}", file=".",
                         hint="A script must not write outside its working directory at import."))
    if result.outcome == "pass":
        out.append(_passed(result, script, tag))
    elif result.outcome == "stopped":
        out.append(found("IMPORT_FAIL", f"the import was stopped by {result.stopped_by} {tag}",
                         severity=Severity.WARN, file=script.rel, evidence=result.output_tail.strip()[-500:],
                         hint="Importing the script must be quick and harmless: move work into main()."))
    else:
        out.append(_failed(result, sub, script, tag))
    return out


def _sandbox_tag(result) -> str:
    parts = [f"sandbox: {result.sandbox.level}"]
    gaps = result.sandbox.not_isolated()
    if gaps:
        parts.append("NOT isolated: " + ", ".join(gaps))
    if result.python and result.target_python:
        ran = tuple(int(part) for part in result.python.split(".")[:2])
        if ran != tuple(result.target_python):
            target = ".".join(map(str, result.target_python))
            parts.append(f"Python {result.python} ran it: no python{target} with torch is installed here")
    return "[" + "; ".join(parts) + "]"


def _passed(result, script: Script, tag: str) -> Finding:
    # The import time goes in the evidence: the message stays the same from run to run, so a
    # review comment built from it is deterministic.
    dims = result.dims
    parts = ["imported"]
    if dims:
        parts.append(f"layers {dims.get('layers')}, width {dims.get('width')}, vocab {dims.get('vocab', '?')}"
                     f" (from {dims.get('from')})")
    parts.append(f"code {result.code_bytes:,} bytes")
    stubs = ", ".join(result.stubbed) or "none"
    return found("IMPORT_FAIL", f"{PASSED}: " + "; ".join(parts) + f" {tag}",
                 severity=Severity.INFO, file=script.rel,
                 evidence=f"imported in {result.seconds:.2f} s; Python {result.python}; "
                          f"sandbox {result.sandbox.describe()}; "
                          f"{result.limits.describe(result.sandbox.tree_memory)}; stubbed: {stubs}"
                          + (f"; forward: {result.forward['detail']}" if result.forward else ""),
                 confidence="high" if result.sandbox.network_isolated else "low")


def _failed(result, sub: Submission, script: Script, tag: str) -> Finding:
    error = result.error or {}
    kind, message, mro = error.get("type", "?"), error.get("message", ""), error.get("mro", [])
    where = _where(result, sub, script)
    shown = f"{kind}: {message}".strip()
    if error.get("stub"):
        return found("IMPORT_STUB_LIMIT", f"the import failed at the stubbed GPU-only name "
                     f"{error['stub']}: {shown} {tag}", **where,
                     hint="Not a defect on H100; a reviewer's CPU smoke test cannot get past this line.")
    limit = ("CPU time" if "CPUTimeLimit" in mro
             else "memory" if "MemoryError" in mro or "can't allocate memory" in message
             else "process" if "BlockingIOError" in mro
             else "output" if error.get("errno") == errno.EFBIG
             else "open-file" if error.get("errno") == errno.EMFILE else None)
    if limit:
        return found("IMPORT_FAIL", f"the import hit the sandbox's {limit} limit: {shown} {tag}",
                     severity=Severity.WARN, **where,
                     hint="Importing the script must be quick and harmless: move work into main().")
    if "SyntaxError" in mro and _newer_syntax(result, sub, where["file"]):
        return found("IMPORT_FAIL", f"the import fails with {shown} on Python {result.python}, which is older "
                     f"than the syntax the file uses; the Python-version check reports that syntax "
                     f"against the target (PY_SYNTAX_TOO_NEW) {tag}", severity=Severity.WARN, **where,
                     hint="Not a defect of the script on a Python that accepts the syntax; see the "
                          "Python-version findings.")
    if "SyntaxError" in mro or "NameError" in mro:
        return found("IMPORT_FAIL", f"the import fails with {shown} {tag}", **where,
                     hint="This fails on any machine, GPU or not: correct the script.")
    module = error.get("module") or ""
    if "ModuleNotFoundError" in mro and module:
        top = module.split(".")[0]
        declared = {normalize(n) for n in (sub.requirements or [])}
        if normalize(DISTRIBUTIONS.get(top, top)) in declared or normalize(top) in declared or top in REFERENCE:
            return found("IMPORT_FAIL", f"the import needs {module}, which is declared (requirements.txt or "
                         f"the reference environment) but not installed here; {_NOT_A_DEFECT} {tag}",
                         severity=Severity.WARN, **where)
        return found("IMPORT_FAIL", f"the import needs {module}, which is not installed and not in "
                     f"requirements.txt {tag}", **where,
                     hint=f"Add `{DISTRIBUTIONS.get(top, top)}` to requirements.txt, or stop importing it.")
    hint = ("The script needs a GPU at import: move CUDA work into main()." if "cuda" in message.lower()
            else "Importing the script should work on CPU: move work into main().")
    return found("IMPORT_FAIL", f"the import fails with {shown}; {_NOT_A_DEFECT} {tag}",
                 severity=Severity.WARN, **where, hint=hint)


def _newer_syntax(result, sub: Submission, rel: str) -> bool:
    """Whether `rel` uses syntax newer than the Python that ran the import."""
    script = sub.scripts.get(rel)
    if script is None or script.source is None or not result.python:
        return False
    ran = tuple(int(part) for part in result.python.split(".")[:2])
    problems = pyversion.analyse(script.source, ran).problems
    return any(p.rule == pyversion.SYNTAX and p.needs is not None and p.needs > ran for p in problems)


def _where(result, sub: Submission, script: Script) -> dict:
    """file, line, via and evidence of the failure: the last traceback frame (or the syntax error's
    place) in the submission's own code, mapped from the sandbox's paths back to the folder."""
    error = result.error or {}
    places = [(f[0], f[1]) for f in error.get("frames", [])]
    if error.get("syntax"):
        places.append((error["syntax"]["file"], error["syntax"]["line"]))
    for filename, line in reversed(places):
        if filename == result.source_path:
            return {"file": script.rel, "line": line, "via": script.via(line),
                    "evidence": _line(script.source, line)}
        if filename and filename.startswith(result.folder_path + "/"):
            rel = filename[len(result.folder_path) + 1:]
            other = sub.scripts.get(rel)
            return {"file": rel, "line": line, "evidence": _line(other.source if other else None, line)}
    return {"file": script.rel}


def _line(source: str | None, line: int | None) -> str:
    lines = (source or "").splitlines()
    return lines[line - 1].strip()[:300] if line and 0 < line <= len(lines) else ""
