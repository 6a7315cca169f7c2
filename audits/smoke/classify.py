"""Turn what the smoke import did into IMPORT_FAIL and IMPORT_STUB_LIMIT findings.

Only three failures are the submission's own defects, and FAIL: a syntax error, an undefined
name, and a module that is neither installed nor declared (requirements.txt or the reference
environment). A syntax error that is only newer syntax than the Python that ran the import is
a WARN: the Python-version check (PY_SYNTAX_TOO_NEW) reports that syntax against the target. A failure at a stubbed GPU-only name is IMPORT_STUB_LIMIT (WARN). Anything else
(CUDA work at import, a declared package missing here, a sandbox limit) is a WARN under
IMPORT_FAIL that says why it is not counted as a defect.
"""

from __future__ import annotations

import errno

from audits import pyversion
from audits.findings import Finding, Severity
from audits.registry import found
from audits.submission import Script, Submission
from audits.submission.imports import DISTRIBUTIONS, REFERENCE, normalize

_NOT_A_DEFECT = "not counted as a defect: only syntax errors, undefined names and undeclared modules are"


def findings(result, sub: Submission, script: Script | None) -> list[Finding]:
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
    if not result.sandbox.network_isolated:
        parts.append("ran WITHOUT network isolation")
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
    return found("IMPORT_FAIL", "SMOKE_TEST_PASS: " + "; ".join(parts) + f" {tag}",
                 severity=Severity.INFO, file=script.rel,
                 evidence=f"imported in {result.seconds:.2f} s; Python {result.python}; "
                          f"sandbox {result.sandbox.describe()}; "
                          f"{result.limits.describe()}; stubbed: {stubs}"
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
