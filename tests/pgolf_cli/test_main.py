"""The `pgolf` group: commands loaded when they run, listed with their own words."""

from __future__ import annotations

import importlib
import subprocess
import sys

from pgolf_cli.main import COMMANDS


def test_the_command_list_is_each_commands_own_first_sentence():
    for name, (module, attribute, line) in COMMANDS.items():
        command = getattr(importlib.import_module(module), attribute)
        assert command.name == name
        assert command.get_short_help_str(limit=10_000) == line


def test_help_loads_neither_the_audit_nor_the_trainer():
    probe = ("import sys\nfrom pgolf_cli.main import cli\n"
             "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'libcst', 'torch', 'rich'}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "audit" in out and out.strip().splitlines()[-1] == "[]"
