"""Precision and recall of the legality rules on the fixtures in tests/fixtures/legality.

    python -m benchmarks.legality_scores             # the fixtures the tests check
    python -m benchmarks.legality_scores --held-out  # fixtures written after the analysis was frozen

A positive is a line a fixture marks `# expect: RULE WARN|FAIL`; a prediction is a WARN or FAIL
finding. Both are (file, rule, severity, line): a finding on the right line with the wrong
severity counts once as a false positive and once as a false negative. "Legal twins quiet"
counts the fixtures declared legal (or dead code) for a rule on which that rule raised no WARN or
FAIL. Prints a Markdown table.
"""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

from tests.legality_fixtures import HELD_OUT, ROOT, RULES, audit, fixtures, problems


def main() -> None:
    root = HELD_OUT if "--held-out" in sys.argv[1:] else ROOT
    tp, fp, fn = collections.Counter(), collections.Counter(), collections.Counter()
    violating, legal, quiet = collections.Counter(), collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in fixtures(root):
            found = problems(audit(fixture, Path(tmp) / "2026-05-01_fixture"))
            wanted = {e for e in fixture.expected if e[2] != "INFO"}
            for item in found & wanted:
                tp[item[1]] += 1
            for item in found - wanted:
                fp[item[1]] += 1
            for item in wanted - found:
                fn[item[1]] += 1
            for rule, role in fixture.roles:
                if role in ("violation", "contested"):
                    violating[rule] += 1
                else:
                    legal[rule] += 1
                    quiet[rule] += not any(item[1] == rule for item in found)
    print("| rule | violating fixtures | legal twins (quiet) | TP | FP | FN | precision | recall |")
    print("|---|---|---|---|---|---|---|---|")
    for rule in RULES:
        if not (violating[rule] or legal[rule] or fp[rule]):
            continue
        p = tp[rule] / (tp[rule] + fp[rule]) if tp[rule] + fp[rule] else float("nan")
        r = tp[rule] / (tp[rule] + fn[rule]) if tp[rule] + fn[rule] else float("nan")
        print(f"| {rule} | {violating[rule]} | {legal[rule]} ({quiet[rule]}) | {tp[rule]} | {fp[rule]} "
              f"| {fn[rule]} | {p:.2f} | {r:.2f} |")
    total_tp, total_fp, total_fn = sum(tp.values()), sum(fp.values()), sum(fn.values())
    print(f"| all | {sum(violating.values())} | {sum(legal.values())} ({sum(quiet.values())}) | {total_tp} "
          f"| {total_fp} | {total_fn} | {total_tp / (total_tp + total_fp):.2f} "
          f"| {total_tp / (total_tp + total_fn):.2f} |")


if __name__ == "__main__":
    main()
