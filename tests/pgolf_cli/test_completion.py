"""Shell completion through click's mechanism, as the README documents it: the script that
`_PGOLF_COMPLETE=bash_source pgolf` prints, sourced in a real bash, completes commands, options
and choices."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.fixture
def pgolf_on_path(tmp_path):
    """An executable named pgolf, as the console script is, running this checkout."""
    script = tmp_path / "bin" / "pgolf"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nfrom pgolf_cli.main import main\nmain()\n")
    script.chmod(0o755)
    return {"PATH": f"{script.parent}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("words,expected", [
    ("pgolf au", ["audit"]),
    ("pgolf audit --form", ["--format"]),
    ("pgolf audit --format s", ["sarif"]),
    ("pgolf audit --exit", ["--exit-zero"]),
])
def test_bash_completes_commands_options_and_choices(pgolf_on_path, words, expected):
    source = subprocess.run(["pgolf"], env={**pgolf_on_path, "_PGOLF_COMPLETE": "bash_source"},
                            capture_output=True, text=True, check=True, timeout=60).stdout
    assert "complete -o nosort -F _pgolf_completion pgolf" in source
    cword = len(words.split()) - 1
    probe = (f"{source}\nCOMP_WORDS=({words}); COMP_CWORD={cword}\n"
             "_pgolf_completion pgolf\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", probe], check=False, env=pgolf_on_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected
