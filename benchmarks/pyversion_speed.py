"""How long the version gate takes on a 150 KB script (a measurement, not a test).

    python -m benchmarks.pyversion_speed

The script is pgolf's own audits/ package glued into one file of at least 150,000 characters
(`from __future__` lines dropped), once clean and once with a PEP 701 f-string, a `type`
statement and a 3.11 library import added before some top-level definitions, so both the quick path and
the path that places findings are timed. Prints the median of 5 runs of each, for the source and
for its self-extracting wrapper (unwrapping included).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from audits import pyversion
from audits.submission import codesize, unwrap

ROOT = Path(__file__).resolve().parents[1]

SIZE = 150_000
RUNS = 5


def _script(with_features: bool) -> str:
    lines: list[str] = []
    for path in sorted((ROOT / "audits").rglob("*.py")):
        lines += [line for line in path.read_text(encoding="utf-8").splitlines()
                  if not line.startswith("from __future__")]
    out, size = [], 0
    for line in lines * 2:
        # before a top-level definition that no decorator precedes
        if with_features and line.startswith(("def ", "class ")) and out and not out[-1].strip():
            out += ['log(f"{", ".join(names)}")', "type Alias = int", "import tomllib", ""]
        if size >= SIZE and line[:1] not in ("", " ", "#", ")", "]", "}"):
            break  # at a top-level statement, so the file stays valid
        out.append(line)
        size += len(line) + 1
    return "\n".join(out) + "\n"


def _time(fn) -> str:
    """Median wall-clock and CPU seconds (CPU of all threads: the wall figure grows when other
    work shares the machine, the CPU one does not)."""
    wall, cpu = [], []
    for _ in range(RUNS):
        pyversion.analyse.cache_clear()
        started, started_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return f"{statistics.median(wall):.2f} s ({statistics.median(cpu):.2f} s CPU)"


def main() -> None:
    print(f"Python {sys.version.split()[0]}, median of {RUNS} runs")
    for with_features in (False, True):
        source = _script(with_features)
        wrapped = codesize.wrap(source)
        found = pyversion.analyse(source).problems
        plain = _time(lambda: pyversion.analyse(source))
        unwrapped = _time(lambda: pyversion.analyse(unwrap.unwrap(wrapped, "train_gpt.py", lambda name: b"").source))
        label = "with features" if with_features else "clean        "
        print(f"{label}  {len(source):,} chars, {len(found)} problems: analyse {plain}; "
              f"unwrap + analyse of its {len(wrapped):,}-byte wrapper {unwrapped}")


if __name__ == "__main__":
    main()
