"""scripts/score_corpus.py: every case audited in a process of its own, forked from one that has
imported the audit, with the JSON a direct audit gives; a case past --timeout is killed and named."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from audits import api
from audits.context import AuditOptions
from audits.report import FORMATS

ROOT = Path(__file__).parents[2]
REDUCED = ROOT / "tests" / "fixtures" / "corpus_reduced"
CASES = ("slot_per_window_delta", "early_format_record", "no_script_shipped")
SCORER = "import os, sys\nfor name in sorted(os.listdir(sys.argv[1])):\n    print('scored', name)\n"


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    for name in CASES:
        shutil.copytree(REDUCED / name, corpus / name / "folder")
    (tmp_path / "score.py").write_text(SCORER, encoding="utf-8")
    return corpus


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "score_corpus.py"), "--corpus",
                           str(_corpus(tmp_path)), "--scorer", str(tmp_path / "score.py"), "--out",
                           str(tmp_path / "out"), "--jobs", "2", *extra],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_each_case_gets_the_json_of_a_direct_audit(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"audited {len(CASES)} cases" in done.stdout
    assert [line for line in done.stdout.splitlines() if line.startswith("scored")] == \
        [f"scored {name}.json" for name in sorted(CASES)]
    for name in CASES:
        folder = tmp_path / "corpus" / name / "folder"
        direct = FORMATS["json"](api.audit([str(folder)], AuditOptions(smoke=False)))
        written = (tmp_path / "out" / f"{name}.json").read_text(encoding="utf-8")
        assert json.loads(written) == json.loads(direct)


def test_a_case_past_its_timeout_is_killed_and_named(tmp_path):
    # a script whose parse alone takes far longer than the moment between the fork and the check
    corpus = tmp_path / "corpus"
    (corpus / "long" / "folder").mkdir(parents=True)
    (corpus / "long" / "folder" / "train_gpt.py").write_text(
        "".join(f"v{i} = {i}\n" for i in range(40_000)), encoding="utf-8")
    (tmp_path / "score.py").write_text(SCORER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "score_corpus.py"), "--corpus",
                           str(corpus), "--scorer", str(tmp_path / "score.py"), "--out",
                           str(tmp_path / "out"), "--timeout", "0"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 1
    assert "long: timed out after 0 s" in done.stdout.splitlines()
