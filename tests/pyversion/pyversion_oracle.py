"""The CPython 3.10 oracle: a real CPython 3.10.2 (pyodide 0.22.1, WebAssembly under Node)
compiles each snippet of the corpus; its verdicts are kept in oracle310.json.

Recompute the fixture after changing the corpus (needs Node and `npm install pyodide@0.22.1` in
the repository root):

    python tests/pyversion/pyversion_oracle.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURE = HERE / "oracle310.json"
SCRIPT = HERE / "oracle310.cjs"


def available() -> str | None:
    """Why the oracle cannot run here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "pyodide" / "pyodide.js").exists():
        return "pyodide is not installed (npm install pyodide@0.22.1)"
    return None


def run(sources: list[str]) -> dict:
    """{"version": "3.10.2", "verdicts": [...]} from the real CPython 3.10."""
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "snippets.json"
        listing.write_text(json.dumps(sources), encoding="utf-8")
        done = subprocess.run(["node", str(SCRIPT), str(listing)], capture_output=True, text=True,
                              timeout=300, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"the oracle failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def load() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def main() -> int:
    sys.path.insert(0, str(HERE))
    from pyversion_corpus import snippets

    reason = available()
    if reason:
        print(f"cannot run the oracle: {reason}", file=sys.stderr)
        return 2
    sources = snippets()
    result = run(sources)
    cases = [{"source": s, "verdict": v} for s, v in zip(sources, result["verdicts"])]
    # One case per line, so a change to the corpus reads as a small diff.
    lines = ",\n".join(json.dumps(case, ensure_ascii=False) for case in cases)
    FIXTURE.write_text(f'{{"python": "{result["version"]}", "cases": [\n{lines}\n]}}\n', encoding="utf-8")
    print(f"wrote {len(cases)} verdicts of CPython {result['version']} to {FIXTURE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
