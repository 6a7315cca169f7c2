"""Hostile pull requests through every command that meets a PR (see changes.py): the change
never configures its own audit, no input stalls or breaks pgolf, every output stays one finding
a line."""

from __future__ import annotations

import json
import re
import shutil
import signal

import pytest
from changes import COMMANDS, FOLDER, ROOT, TRACK, Change, damaged_blob, verdict, waived
from support import SANDBOXES, good_folder_files, record_log

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

NEW_SYNTAX = "type Vector = list[float]"  # Python 3.12 syntax: fails the 3.10 gate
WAIVERS = ('[tool.pgolf]\npython = "3.12"\nbaseline-bpb = 9.0\n[tool.pgolf.waivers]\n'
           'PY_SYNTAX_TOO_NEW = "it runs on 3.12"\nLAYOUT_NOT_SINGLE_FOLDER = "the extra file is harmless"\n')


def folder(**files) -> dict[str, str | bytes]:
    return {f"{FOLDER}/{name}": text for name, text in {**good_folder_files(), **files}.items()}


def test_a_pr_does_not_waive_its_own_findings(tmp_path):
    """The PR writes waiver comments in its script (in plain text and inside a self-extracting
    wrapper), a pyproject.toml with [tool.pgolf] in its folder and another at the repository's
    root: the syntax finding and the one-folder finding stand, and the significance test keeps its
    baseline, wherever the change is known."""
    from audits.submission import codesize
    wrapped = codesize.wrap(f"import torch\n{NEW_SYNTAX}  # pgolf: waive PY_SYNTAX_TOO_NEW runs on 3.12\n")
    change = Change(tmp_path, {
        **folder(**{"train_gpt.py": f"import torch\n# pgolf: waive PY_SYNTAX_TOO_NEW runs on 3.12\n{NEW_SYNTAX}\n",
                    "train_gpt_wrapped.py": wrapped, "pyproject.toml": WAIVERS}),
        "pyproject.toml": WAIVERS})
    for command in COMMANDS:
        done = change.run(command, "--no-smoke")
        if command == "audit":  # the author's own audit of the folder: the root's table and the
            doc = json.loads(done.stdout)  # comments are theirs; the folder's own table is not read
            assert doc["target_python_origin"].endswith(f"{change.checkout}/pyproject.toml")
            assert "vs baseline 9.00000" in done.stdout
            continue
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert verdict(command, done) in ("ILLEGAL", "NEEDS_ACTION"), command
        assert waived(command, done) == [], (command, done.stdout)
        assert "PY_SYNTAX_TOO_NEW" in done.stdout and "LAYOUT_NOT_SINGLE_FOLDER" in done.stdout, command
        assert "vs baseline " in done.stdout and "vs baseline 9.00000" not in done.stdout, command  # not its own


def test_the_action_shows_a_waiver_it_was_given(tmp_path):
    """A waiver from outside the change (the workflow's arguments, the base commit's
    pyproject.toml) is honoured and shown as waived in the annotations, not dropped."""
    script = folder(**{"train_gpt.py": f"import torch\n{NEW_SYNTAX}\n"})
    change = Change(tmp_path / "args", script)
    done = change.run("action", "--no-smoke", "--waive", "'PY_SYNTAX_TOO_NEW=runs on 3.12'")
    change = Change(tmp_path / "base", script,
                    base={"pyproject.toml": '[tool.pgolf.waivers]\nPY_SYNTAX_TOO_NEW = "runs on 3.12"\n'})
    for done in (done, change.run("action", "--no-smoke")):
        assert done.returncode == 0, done.stdout
        (line,) = [line for line in done.stdout.splitlines() if "PY_SYNTAX_TOO_NEW" in line]
        assert line.startswith("::notice ") and "(waived)" in line and "waived: runs on 3.12" in line


LOADER = ("import torch\nfrom torch.utils import cpp_extension\n\nif __name__ == '__main__':\n"
          "    cpp_extension.load(name='kernel', sources=['kernel.c'])\n")


def test_inputs_built_to_backtrack_do_not_stall_the_audit(tmp_path):
    """A 400 KB step line of letters, and a 300 KB C loop body of assignments without `;` in a
    source the script loads: a pattern that backtracks would take hours on the line, minutes on
    the body."""
    log = good_folder_files()["train_seed42.log"] + "step:2/2 train_loss:1.0 " + "a" * 400_000 + "\n"
    kernel = "void f(float *a, int n) {\n  for (int i = 0; i < n; i++) {" + "x = 1 " * 50_000 + "}\n}\n"
    change = Change(tmp_path, folder(**{"train_seed42.log": log, "train_gpt.py": LOADER, "kernel.c": kernel}))
    for command in COMMANDS:
        done = change.run(command, "--no-smoke")
        assert done.returncode in (0, 1), (command, done.stderr)
        assert "AUDIT_TIME_LIMIT" not in done.stdout, command


def test_a_pr_folder_2500_directories_deep_is_a_finding(tmp_path):
    """A path 2,500 directories deep in the PR's folder: written out as deep as the audit reads,
    and reported as a finding, not an internal error."""
    deep = f"{FOLDER}/" + "d/" * 2500 + "x.py"
    files = {path: text.encode() for path, text in folder().items()}
    change = Change(tmp_path, {}, raw=lambda upstream: {**files, deep: b"x = 1\n"})
    done = change.run("review --pr", "--no-smoke")
    assert done.returncode in (0, 1), done.stderr
    assert "deeper than 8 levels" in done.stdout


def test_a_blob_claiming_more_than_it_holds_does_not_hang_review(tmp_path):
    """A damaged object in the clone: its header claims 100,000 bytes, its body holds 5. git
    cat-file sends the 5 and waits for the next request: the review stops waiting, says so in one
    line, and leaves no git process behind."""
    files = {path: text.encode() for path, text in folder().items()}
    change = Change(tmp_path, {}, raw=lambda upstream: {
        **files, f"{FOLDER}/notes.txt": damaged_blob(upstream, 100_000, b"short")})
    done = change.run("review --pr", "--no-smoke")
    assert done.returncode == 2 and "git cat-file: no answer" in done.stderr, done.stderr


def test_numbers_and_nesting_beyond_the_parsers_limits_are_findings(tmp_path):
    """submission.json holding a 5,000-digit integer, and pyproject.toml files nested 400,000
    deep in the folder and at the root: each a finding or one line, never an internal error (exit
    2, no report)."""
    claims = json.loads(good_folder_files()["submission.json"])
    text = json.dumps(claims)[:-1] + ', "val_bpb": ' + "9" * 5000 + ', "bytes_total": ' + "9" * 400 + "}"
    deep = "x = " + "[" * 400_000 + "]" * 400_000 + "\n"
    change = Change(tmp_path, {**folder(**{"submission.json": text, "pyproject.toml": deep}),
                               "pyproject.toml": deep})
    for command in COMMANDS:
        done = change.run(command, "--no-smoke")
        if command == "audit":  # the author's own audit reads the root's pyproject.toml: one line
            assert done.returncode == 2 and "nested too deep" in done.stderr, done.stderr
            continue
        assert done.returncode in (0, 1), (command, done.stderr)
        assert "SUBMISSION_JSON_INVALID" in done.stdout, command


def test_a_folder_name_cannot_forge_a_row_of_the_sweeps_table(tmp_path):
    """The folder's name holds pipes that, left unescaped, split sweep.md's row so that it reads
    PASS for an ILLEGAL PR; each cell holds what it should."""
    from markdown_it import MarkdownIt
    name = "2026-04-09_x` | PASS | 1.00000 | all rules pass | `y"
    files = good_folder_files()
    files["train_seed42.log"] = record_log(42, bpb=1.081, train_ms=650_000)  # over the time budget
    change = Change(tmp_path, {f"{TRACK}/{name}/{k}": v for k, v in files.items()}, folder=f"{TRACK}/{name}")
    done = change.run("sweep", "--no-smoke")
    assert done.returncode in (0, 1), done.stderr
    tokens = MarkdownIt("commonmark").enable("table").parse((tmp_path / "sweep" / "sweep.md").read_text())
    rows, row = [], None
    for token in tokens:
        if token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close":
            rows.append(row)
            row = None
    header, (cells,) = rows[0], rows[1:]
    assert len(cells) == len(header) == 6
    assert cells[4] == "ILLEGAL" and "TRAIN_OVER_BUDGET" in cells[5], cells


@pytest.mark.parametrize(("hidden", "commands"), [((), (*COMMANDS, "text")), (("bwrap",), (*COMMANDS, "text")),
                                                  (("bwrap", "unshare"), ("audit", "review"))],
                         ids=["best", "no-bwrap", "neither"])
def test_a_weaker_sandbox_is_named_in_every_verdict_line(tmp_path, hidden, commands):
    """With its tools off PATH the smoke import falls back to a weaker level: each command's
    verdict line (the JSON's `sandbox`, the text's verdict line, the review's first line, the
    Action's verdict annotation) names the level and what it leaves open; at the full level,
    nothing more than the verdict. (The level without namespaces in two commands only: the
    renderers are the same.)"""
    levels = [level for level in SANDBOXES if {"bubblewrap": "bwrap"}.get(level, level) not in hidden]
    expected = SANDBOXES[levels[0]]
    note = expected.weaker()
    change = Change(tmp_path, folder())
    if hidden:
        change.without(*hidden)
    for command in commands:
        done = change.run("audit" if command == "text" else command, "--smoke",
                          *(("--format", "text") if command == "text" else ()))
        assert done.returncode in (0, 1), (command, done.stderr)
        assert f"[sandbox: {expected.level}" in done.stdout, command  # the import ran, at that level
        if command.startswith("audit"):
            (sub,) = json.loads(done.stdout)["submissions"]
            assert sub["sandbox"] == {"level": expected.level, "not_isolated": expected.not_isolated()}, command
            continue
        line = {"text": r"(?m)^  verdict: .*$", "action": r"(?m)^::notice title=pgolf verdict::.*$",
                "review": r"^\*\*pgolf review: .*", "review --pr": r"^\*\*pgolf review: .*"}[command]
        line = re.search(line, done.stdout).group(0)
        if note is None:
            assert "sandbox" not in line, (command, line)
        else:
            assert note in line and f"sandbox: {expected.level}, NOT isolated: " in line, (command, line)


HANG = (ROOT / "tests" / "hostile" / "hang" / "train_gpt.py").read_text()


def test_sigterm_sigkill_and_timeouts_leave_no_folder_of_a_pr(tmp_path):
    """pgolf's review of the PR, or its sweep, is terminated, or killed, while the PR's script
    sleeps through its import, and a sweep stops the case at its time limit: the pgolf-pr-*,
    pgolf-sweep-* and pgolf-smoke-* folders go, at once or with the next run."""
    change = Change(tmp_path, folder(**{"train_gpt.py": HANG}))
    reaped = change.signalled("review --pr", signal.SIGTERM, "--smoke")
    assert reaped["returncode"] == 128 + signal.SIGTERM and reaped["leftovers"] == []
    assert list(change.tmpdir.iterdir()) == []
    reaped = change.signalled("review --pr", signal.SIGKILL, "--smoke")
    assert reaped["returncode"] == -signal.SIGKILL
    assert sorted(p.name.split("-")[1] for p in change.tmpdir.iterdir()) == ["pr", "smoke"]
    change.run("review --pr", "--no-smoke")  # removes what the killed run left
    done = change.run("sweep", "--smoke", "--timeout", "5")  # checks that nothing is left
    assert "TIMEOUT" in (tmp_path / "sweep" / "sweep.md").read_text()
    reaped = change.signalled("sweep", signal.SIGTERM, "--smoke")
    assert reaped["returncode"] == 128 + signal.SIGTERM and reaped["leftovers"] == [], reaped
    assert list(change.tmpdir.iterdir()) == []
    reaped = change.signalled("sweep", signal.SIGKILL, "--smoke")
    assert reaped["returncode"] == -signal.SIGKILL
    assert sorted(p.name.split("-")[1] for p in change.tmpdir.iterdir()) == ["smoke", "sweep"]
    change.run("sweep", "--no-smoke")  # removes what the killed run left
