"""Hostile pull requests: a challenge repository whose PR 1 adds a records folder (and whatever
else the attack needs), run through every way pgolf meets a PR, each in a separate process under
`reaper.py` with a planted GITHUB_TOKEN, a HOME holding a secret and a TMPDIR of its own, and
checked from outside: exit 0/1/2 with at most one line on stderr, no secret in any output, no
process or temporary folder left, the work trees untouched.

The commands (and `pgolf sweep` of the PR, for its table): `pgolf audit FOLDER` (the author's own audit of the checked-out folder), `pgolf
audit FOLDER --changed-files -` (the change given as a list), `pgolf review FOLDER`, `pgolf review
--pr 1`, and the Action's own command line, taken from action.yml and run by bash in the PR's
checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
import zlib
from pathlib import Path

import yaml
from prrepos import add_pr, challenge_repo, clone, git
from support import write_folder

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
TRACK = "records/track_10min_16mb"
NAME = "2026-04-09_Hostile"
FOLDER = f"{TRACK}/{NAME}"
TIME_LIMIT_S = 300  # a guard against a hang, not a measure: each command takes seconds
MEMORY_LIMIT_KIB = 6 * 2**20  # pgolf, and a smoke import under its own 4 GiB limit
COMMANDS = ("audit", "audit --changed-files", "review", "review --pr", "action")


def action_command() -> str:
    """The line of action.yml's audit step that runs pgolf."""
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    script = next(s["run"] for s in steps if s.get("name", "").startswith("Audit"))
    (line,) = [line.strip() for line in script.splitlines() if line.strip().startswith("pgolf audit")]
    return line


def damaged_blob(repo: Path, claimed: int, body: bytes) -> str:
    """A loose object in `repo` whose header claims `claimed` bytes around `body`: its id."""
    oid = hashlib.sha1(b"damaged" + body).hexdigest()
    path = Path(git(repo, "rev-parse", "--git-dir"))
    path = (path if path.is_absolute() else repo / path) / "objects" / oid[:2] / oid[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zlib.compress(b"blob %d\0" % claimed + body))
    return oid


def publish_raw(repo: Path, number: int, files: dict[str, bytes | str]) -> None:
    """Publish as refs/pull/N/head a commit over main adding `files` (repository path -> bytes, or
    the id of an object already in the store), written with git fast-import: paths no work tree
    could hold are fine."""
    stream = [b"commit refs/pull/%d/head" % number, b"committer t <t@t> 0 +0000", b"data 2", b"pr",
              b"from " + git(repo, "rev-parse", "main").encode()]
    for path, content in files.items():
        if isinstance(content, str):
            stream.append(b"M 100644 %s %s" % (content.encode(), path.encode()))
        else:
            stream += [b"M 100644 inline " + path.encode(), b"data %d" % len(content), content]
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"\n".join(stream) + b"\n",
                   check=True, capture_output=True, timeout=120)


class Change:
    """PR 1 of a fresh challenge repository (whose main also holds `base`), adding `files`
    (repository path -> content); with `raw`, the PR is written by `publish_raw(upstream, 1,
    raw(upstream))` instead, and only `review --pr` meets it (a work tree cannot hold it)."""

    def __init__(self, tmp_path: Path, files: dict[str, str | bytes], raw=None, folder: str = FOLDER,
                 base: dict[str, str] | None = None):
        self.tmp_path = tmp_path
        self.result = tmp_path / "reaper.json"
        self.folder = folder
        upstream = challenge_repo(tmp_path / "upstream")
        if base:  # files the base commit holds beside the challenge's
            write_folder(upstream, base)
            git(upstream, "add", "-A")
            git(upstream, "commit", "-qm", "base settings")
        if raw is None:
            add_pr(upstream, 1, files)
        else:
            publish_raw(upstream, 1, raw(upstream))
        self.base = git(upstream, "rev-parse", "main")
        self.clone = clone(upstream, tmp_path / "clone")
        self.checkout = tmp_path / "checkout"
        subprocess.run(["git", "clone", "-q", str(upstream), str(self.checkout)], check=True, capture_output=True)
        git(self.checkout, "fetch", "-q", "origin", "refs/pull/1/head")
        if raw is None:
            git(self.checkout, "checkout", "-q", "FETCH_HEAD")
        self.changes = git(self.checkout, "diff", "--name-status", "--no-renames", f"{self.base}...FETCH_HEAD")
        self.token = f"sekrit-token-{uuid.uuid4().hex}"
        self.file_secret = f"sekrit-file-{uuid.uuid4().hex}"
        self.home = tmp_path / "home"
        self.home.mkdir()
        (self.home / ".netrc").write_text(f"machine github.com password {self.file_secret}\n")
        self.tmpdir = tmp_path / "tmpdir"
        self.tmpdir.mkdir()
        self.bin = tmp_path / "bin"  # `pgolf` as an installed entry point: the cwd is not on its path
        self.bin.mkdir()
        (self.bin / "pgolf").write_text(f"#!{sys.executable}\nfrom pgolf_cli.main import main\n"
                                       "if __name__ == '__main__':\n    main()\n")
        (self.bin / "pgolf").chmod(0o755)
        self.path = f"{self.bin}:{os.environ['PATH']}"

    def without(self, *programs: str) -> None:
        """Run pgolf with a PATH that holds every program of this one but `programs`: where the
        smoke import looks for its sandbox's tools."""
        hidden = self.tmp_path / ("bin-without-" + "-".join(programs))
        hidden.mkdir()
        for folder in os.environ["PATH"].split(os.pathsep):
            for entry in (os.scandir(folder) if os.path.isdir(folder) else ()):
                if entry.name not in programs and not os.path.lexists(hidden / entry.name):
                    (hidden / entry.name).symlink_to(entry.path)
        self.path = f"{self.bin}:{hidden}"

    def run(self, command: str, *extra: str) -> subprocess.CompletedProcess:
        """One of COMMANDS, with `extra` options; the result, checked for containment."""
        before = self._trees()
        argv, cwd, env = self._command(command, extra)
        done = subprocess.run(argv, cwd=cwd, env=env, input=self.changes.encode(),
                              capture_output=True, timeout=TIME_LIMIT_S + 60)
        reaped = json.loads(self.result.read_text())
        output = done.stdout + done.stderr
        assert self.token.encode() not in output and self.file_secret.encode() not in output
        assert reaped["returncode"] in (0, 1, 2), (command, done.stderr[-2000:])
        assert len(done.stderr.strip().splitlines()) <= 1, (command, done.stderr[-2000:])
        assert b"Traceback" not in output, command
        assert reaped["leftovers"] == [], command
        assert reaped["max_rss_kib"] < MEMORY_LIMIT_KIB, command
        assert list(self.tmpdir.iterdir()) == [], command
        assert sorted(p.name for p in self.home.iterdir()) == [".netrc"], command
        assert self._trees() == before, command
        return subprocess.CompletedProcess(argv[-1], reaped["returncode"], done.stdout.decode(), done.stderr.decode())

    def signalled(self, command: str, sig: int, *extra: str) -> dict:
        """Start the command, send `sig` to pgolf once the smoke import runs; what the reaper saw."""
        argv, cwd, env = self._command(command, extra)
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TIME_LIMIT_S
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        while not (children.read_text().split() and any(self.tmpdir.glob("pgolf-smoke-*/area"))):
            assert time.monotonic() < deadline, "the import never started"
            time.sleep(0.1)
        os.kill(int(children.read_text().split()[0]), sig)
        proc.wait(timeout=TIME_LIMIT_S + 60)
        return json.loads(self.result.read_text())

    def _command(self, command: str, extra: tuple[str, ...]) -> tuple[list[str], Path, dict[str, str]]:
        folder = shlex.quote(str(self.checkout / self.folder))
        line = {
            "audit": f"pgolf audit {folder} --format json",
            "audit --changed-files": f"pgolf audit {folder} --format json --changed-files -",
            "review": f"pgolf review {folder}",
            "review --pr": f"pgolf review --pr 1 --repo {self.clone}",
            "action": action_command(),
            "sweep": f"pgolf sweep --repo {self.clone} --prs 1 --out {self.tmp_path / 'sweep'}",
        }[command]
        line += "".join(f" {x}" for x in extra)
        cwd = self.checkout if command == "action" else self.tmp_path
        env = {**os.environ, "GITHUB_TOKEN": self.token, "HOME": str(self.home), "TMPDIR": str(self.tmpdir),
               "PGOLF_BASE": self.base, "PGOLF_ARGS": "",
               "PATH": self.path, "PYTHONPATH": str(ROOT)}
        # bash runs the one command in its own place: pgolf is the reaper's child
        return ([sys.executable, str(HERE / "reaper.py"), str(self.result), str(TIME_LIMIT_S),
                 "bash", "-c", line], cwd, env)

    def _trees(self) -> tuple[str, str]:
        return tuple(git(repo, "status", "--porcelain", "--ignored") for repo in (self.checkout, self.clone))


def verdict(command: str, done: subprocess.CompletedProcess) -> str:
    """The submission's verdict as the command's output gives it."""
    if command.startswith("audit"):
        return json.loads(done.stdout)["submissions"][0]["verdict"]
    if command == "action":
        return re.search(r"::notice title=pgolf verdict::[^:]*: (\w+)", done.stdout).group(1)
    return re.match(r"\*\*pgolf review: (\w+)\*\*", done.stdout).group(1)


def waived(command: str, done: subprocess.CompletedProcess) -> list[str]:
    """The rules the command's output shows as waived."""
    if command.startswith("audit"):
        return json.loads(done.stdout)["submissions"][0]["waived"]
    if command == "action":
        return re.findall(r"title=pgolf (\w+) \(waived\)", done.stdout)
    return re.findall(r"`(\w+)` \(", "".join(re.findall(r"(?m)^Waived: .*$", done.stdout)))
