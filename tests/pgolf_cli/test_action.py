"""The composite GitHub Action of action.yml, run as the runner runs it, as far as that can be
done without GitHub: each `run` step through `bash -e -o pipefail` in its working directory, with
the environment its `env:` block gives (the `${{ inputs.* }}` and `${{ github.* }}` expressions
filled in from the action's defaults and a pull_request event), in a clone of a local repository
whose PR branch adds a records folder.

What is not run: the `actions/setup-python` step (the test puts a fresh virtual environment
first on PATH instead, as that step puts its Python), and the torch install from the network
(the `torch` input is left empty; the environment sees the test's own torch). The pgolf install
step runs for real: pip builds and installs the action's checkout into that environment, with no
index and no dependencies fetched.
"""

from __future__ import annotations

import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from localrepo import GIT_ENV, TRACK, git, pr_repository
from support import good_folder_files, record_log

ROOT = Path(__file__).parents[2]
NAME = "2026-04-09_Bad_Run"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def fill(value: str, context: dict[str, str]) -> str:
    """A workflow expression of the only kind the action uses: a context lookup."""
    def lookup(match):
        assert match.group(1) in context, f"the test does not know {match.group(1)}"
        return context[match.group(1)]
    return EXPRESSION.sub(lookup, str(value))


def action_checkout(tmp_path: Path) -> Path:
    """This repository's files that an installed action needs, as the runner checks it out."""
    path = tmp_path / "action"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("audits", "pgolf_cli", "trainer"):
        shutil.copytree(ROOT / package, path / package, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "action.yml"):
        shutil.copy(ROOT / name, path / name)
    return path


def python_environment(tmp_path: Path) -> Path:
    """A new virtual environment that sees this one's packages (pip, setuptools, torch, libcst)
    but not pgolf: pgolf comes from the install step."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    inner = subprocess.run([venv / "bin" / "python", "-c", "import site; print(site.getsitepackages()[0])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    outer = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(inner) / "outer.pth").write_text("\n".join(outer) + "\n")
    return venv


def run_action(tmp_path: Path, workspace: Path, inputs: dict[str, str], base: str) -> subprocess.CompletedProcess:
    spec = action()
    assert spec["runs"]["using"] == "composite"
    action_path = action_checkout(tmp_path)
    venv = python_environment(tmp_path)
    context = {f"inputs.{k}": str(v.get("default", "")) for k, v in spec["inputs"].items()}
    context.update({f"inputs.{k}": v for k, v in inputs.items()})
    context.update({"github.action_path": str(action_path),
                    "github.event.pull_request.base.sha": base})
    context.update({k: fill(v, context) for k, v in context.items()})  # defaults naming github.*
    env = {**GIT_ENV, "HOME": str(tmp_path), "PATH": f"{venv / 'bin'}:{GIT_ENV['PATH']}",
           "PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1", "PIP_NO_BUILD_ISOLATION": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "GITHUB_ACTION_PATH": str(action_path)}
    ran = []
    for step in spec["runs"]["steps"]:
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@")
            continue
        assert step["shell"] == "bash"
        script = tmp_path / f"step{len(ran)}.sh"
        script.write_text(step["run"])
        step_env = {**env, **{k: fill(v, context) for k, v in step.get("env", {}).items()}}
        cwd = workspace / fill(step.get("working-directory", "."), context)
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], check=False, cwd=cwd,
                              env=step_env, capture_output=True, text=True, timeout=600)
        ran.append(step["name"])
        if done.returncode != 0:
            break
    assert ran[0] == "Install pgolf", (ran, done.stdout, done.stderr)
    return done


def test_the_action_annotates_a_failing_pr_from_a_shallow_checkout(tmp_path):
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)
    origin = pr_repository(tmp_path / "origin", NAME, files)
    base = git(origin, "rev-parse", "main").strip()
    workspace = tmp_path / "workspace"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "submission", f"file://{origin}", str(workspace))
    assert git(workspace, "rev-parse", "--is-shallow-repository").strip() == "true"

    done = run_action(tmp_path, workspace, {"torch": "", "args": "--no-smoke"}, base)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"::notice title=pgolf verdict::{NAME}: ILLEGAL" in lines
    budget = next(line for line in lines if "TRAIN_OVER_BUDGET" in line)
    assert budget.startswith(f"::error file={TRACK}/{NAME}/train_seed42.log,line=")
    # pgolf ran from the environment the install step filled, not from this checkout
    where = subprocess.run([tmp_path / "venv" / "bin" / "python", "-c",
                            "import pgolf_cli; print(pgolf_cli.__file__)"], check=False, capture_output=True, text=True,
                           env={"PATH": GIT_ENV["PATH"]}, cwd=tmp_path)
    assert str(tmp_path / "venv") in where.stdout, where.stdout + where.stderr


def test_without_a_base_the_step_says_so(tmp_path):
    origin = pr_repository(tmp_path / "origin", NAME, good_folder_files())
    done = run_action(tmp_path, origin, {"torch": "", "args": "--no-smoke"}, base="")
    assert done.returncode == 2 and "::error title=pgolf::no base to compare with" in done.stdout
