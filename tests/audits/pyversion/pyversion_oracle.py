"""The CPython 3.10 oracle: a real CPython 3.10.2 (pyodide 0.22.1, WebAssembly under Node)
compiles each snippet of the corpus, and looks up each name of the standard-library table. Its
answers are kept in oracle310.json and stdlib310.json, so the normal test run needs no Node.

Recompute both after changing the corpus or the table (needs Node and
`npm install --no-save pyodide@0.22.1` in the repository root):

    python tests/audits/pyversion/pyversion_oracle.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from audits.pyversion.stdlib_api import ADDED
from pyversion_corpus import snippets

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURE = HERE / "oracle310.json"
NAMES_FIXTURE = HERE / "stdlib310.json"
SCRIPT = HERE / "oracle310.cjs"


def available() -> str | None:
    """Why the oracle cannot run here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "pyodide" / "pyodide.js").exists():
        return "pyodide is not installed (npm install pyodide@0.22.1)"
    return None


def run(items: list[str], mode: str = "compile") -> dict:
    """{"version": "3.10.2", "verdicts": [...]} from the real CPython 3.10: compile verdicts of
    sources, or (mode "names") whether dotted names exist."""
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "items.json"
        listing.write_text(json.dumps(items), encoding="utf-8")
        done = subprocess.run(["node", str(SCRIPT), mode, str(listing)], capture_output=True, text=True,
                              timeout=300, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"the oracle failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def load() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def load_names() -> dict:
    return json.loads(NAMES_FIXTURE.read_text(encoding="utf-8"))


def main() -> int:
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

    names = sorted(ADDED)
    found = run(names, "names")
    table = {"python": found["version"], "present": dict(zip(names, found["verdicts"]))}
    NAMES_FIXTURE.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(names)} names to {NAMES_FIXTURE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
