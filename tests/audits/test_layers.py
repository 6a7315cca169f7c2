"""The architecture the folder names promise: layers without an import running back up, no
circle, audits/ never importing the command line, and every rule loaded by whatever audits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from audits import catalogue

ROOT = Path(__file__).resolve().parents[2]


def test_the_audit_never_imports_the_command_line():
    for path in (ROOT / "audits").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "import pgolf_cli" not in text and "from pgolf_cli" not in text, path


def test_no_import_runs_back_up_a_layer_and_none_goes_in_a_circle():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_graph.py"), "audits"],
                         capture_output=True, text=True, check=True).stdout
    assert "circles: 0" in out and "imports into a higher layer: 0" in out, out


def test_the_engine_runs_every_rule_without_the_caller_loading_them():
    probe = "from audits.engine import CHECKS\nfrom audits.registry import ROWS\nprint(len(CHECKS), len(ROWS))"
    checks, rows = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                  check=True).stdout.split()
    assert int(checks) == int(rows) == len(catalogue.RULES)
