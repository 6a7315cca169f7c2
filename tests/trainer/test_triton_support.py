import os
import subprocess
import sys
from pathlib import Path

import pytest

import trainer.triton_support
from trainer.codesize import pack, wrap

REPO = Path(__file__).resolve().parents[2]
PROBE = ("\nimport inspect\n"
         "try:\n    print(inspect.getsource(probe).splitlines()[0])\n"
         "except OSError:\n    print('no source')\n")


def _run_wrapped(tmp_path: Path, source: str, form) -> list[str]:
    script = tmp_path / "train_gpt.py"
    script.write_bytes(pack(source) if form is pack else form(source).encode("utf-8"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("form", [pack, wrap], ids=["packed", "records_wrapper"])
def test_self_extracting_script_has_readable_sources(tmp_path, form):
    """@triton.jit reads each kernel's source with inspect, as the probe does here (CPU: no Triton).
    Code that the wrapper exec()s has none, unless trainer.triton_support registers it."""
    assert _run_wrapped(tmp_path, "def probe():\n    return 1\n" + PROBE, form) == ["no source"]
    module = Path(trainer.triton_support.__file__).read_text(encoding="utf-8")
    lines = _run_wrapped(tmp_path, module + "\ndef probe():\n    return 1\n" + PROBE, form)
    assert lines == ["def probe():"]
