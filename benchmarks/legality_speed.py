"""Time the legality analysis and a whole audit on a large generated training script.

    python -m benchmarks.legality_speed [--kb 150] [--repeat 5]

The script is built from the legality fixtures: each one's top-level names get a suffix so they
coexist, their `__main__` blocks become functions, and one `main()` calls them all, until the file
reaches the requested size. Everything is reachable from the entry
point, so every rule's code path runs, and findings are spread over the whole file (the worst case
for line numbers, which are computed per statement that holds a finding).

Prints the size, then min and median of wall-clock and of process CPU time (the CPU time is the
fairer figure on a shared machine; the wall time is what a user waits).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import libcst as cst

from audits import legality, pyversion
from audits.context import AuditOptions
from audits.engine import audit_submission
from audits.submission import load, trees
from tests.legality_fixtures import fixtures


class _Rename(cst.CSTTransformer):
    def __init__(self, names: set[str], suffix: str):
        self.names, self.suffix = names, suffix

    def leave_Name(self, original, updated):
        return updated.with_changes(value=updated.value + self.suffix) if updated.value in self.names else updated


def _is_main_guard(stmt) -> bool:
    return isinstance(stmt, cst.If) and "__main__" in cst.Module([]).code_for_node(stmt.test)


def build(kb: int) -> str:
    imports, bodies, calls = [], [], []
    k = 0
    while True:
        for fixture in fixtures():
            if sum(map(len, bodies)) + len(set(imports)) * 30 >= kb * 1000:
                return _assemble(imports, bodies, calls)
            for rel, text in fixture.scripts().items():
                if rel != "train_gpt.py":
                    continue
                module = cst.parse_module(text)
                names = {s.name.value for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))}
                for s in module.body:
                    if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Assign):
                        names |= {t.target.value for t in s.body[0].targets if isinstance(t.target, cst.Name)}
                suffix = f"_{k}"
                renamed = module.visit(_Rename(names, suffix))
                for stmt in renamed.body:
                    code = renamed.code_for_node(stmt)
                    if (isinstance(stmt, cst.SimpleStatementLine)
                            and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))):
                        imports.append(code)
                    elif _is_main_guard(stmt):
                        body = "".join(renamed.code_for_node(s) for s in stmt.body.body)
                        indented = "".join("    " + line if line.strip() else line
                                           for line in body.splitlines(keepends=True))
                        bodies.append(f"def run{suffix}():\n" + indented + "\n")
                        calls.append(f"    run{suffix}()\n")
                    elif not (isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr)):
                        bodies.append(code)
                k += 1


def _assemble(imports: list[str], bodies: list[str], calls: list[str]) -> str:
    header = "".join(dict.fromkeys(imports))
    return header + "\n" + "".join(bodies) + "\n\ndef main():\n" + "".join(calls) + \
        "\n\nif __name__ == \"__main__\":\n    main()\n"


def timed(fn, repeat: int) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    source = build(args.kb)
    compile(source, "train_gpt.py", "exec")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "2026-05-01_bench"
        folder.mkdir()
        (folder / "train_gpt.py").write_text(source)

        def analysis():
            legality.analyse_sources.cache_clear()
            trees.clear()
            legality.analyse_sources((("train_gpt.py", source),))

        def whole_audit():  # a first audit: nothing parsed or analysed before
            legality.analyse_sources.cache_clear()
            pyversion.analyse.cache_clear()
            trees.clear()
            audit_submission(load(folder), AuditOptions())

        found = legality.analyse_sources((("train_gpt.py", source),)).verdicts
        print(f"script: {len(source.encode()):,} bytes, {source.count(chr(10)):,} lines, {len(found)} verdicts")
        for label, fn in (("legality analysis", analysis), ("whole audit (every rule)", whole_audit)):
            wall, cpu = timed(fn, args.repeat)
            print(f"{label}: wall min {min(wall):.2f} s, median {statistics.median(wall):.2f} s; "
                  f"CPU min {min(cpu):.2f} s, median {statistics.median(cpu):.2f} s ({args.repeat} runs)")


if __name__ == "__main__":
    main()
