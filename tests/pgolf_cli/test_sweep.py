"""`pgolf sweep`: many cases of a clone audited in parallel, tabulated four ways, cached by content;
and its HTML page in a real headless browser."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pgolf_cli.main import cli
from prrepos import OLD, add_pr, challenge_repo, clone, folder_files, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

MERGED = "records/track_10min_16mb/2026-04-08_Merged"
HOSTILE = "=1+1 </script><script>document.title='pwned'</script> | **bold** @someone"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    upstream = challenge_repo(tmp_path_factory.mktemp("upstream"))
    add_pr(upstream, 3, folder_files(MERGED, train_ms=700_000), merge_title="Record: merged run")
    add_pr(upstream, 5, folder_files("records/track_10min_16mb/2026-04-09_Five"))
    add_pr(upstream, 6, {**folder_files("records/track_10min_16mb/2026-04-09_Six"), "README.md": "edited\n"})
    seven = folder_files("records/track_non_record_16mb/2026-04-09_Seven")
    seven["records/track_non_record_16mb/2026-04-09_Seven/submission.json"] = json.dumps(
        {"author": "Ada", "github_id": "ada", "name": HOSTILE, "date": "2026-04-09", "val_bpb": 1.081})
    add_pr(upstream, 7, seven)
    return clone(upstream, tmp_path_factory.mktemp("clone") / "parameter-golf")


def sweep(repo: Path, out: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["sweep", "--repo", str(repo), "--out", str(out), "--no-smoke",
                                      "-j", "2", *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def opened(repo, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "out"
    sweep(repo, out, "--open")
    return out


def rows(out: Path) -> list[dict]:
    return json.loads((out / "sweep.json").read_text())["rows"]


def test_records_are_every_folder_of_main_with_the_pr_that_merged_it(repo, tmp_path):
    sweep(repo, tmp_path, "--records")
    got = {r["folder"]: (r["pr"], r["title"], r["verdict"]) for r in rows(tmp_path)}
    assert got == {OLD: (None, "base", "PASS"), MERGED: (3, "Record: merged run", "ILLEGAL")}
    assert "TRAIN_OVER_BUDGET" in next(r for r in rows(tmp_path) if r["folder"] == MERGED)["finding"]


def test_open_is_every_pr_not_merged_into_main(opened):
    got = {r["pr"]: r["verdict"] for r in rows(opened)}
    assert got == {5: "PASS", 6: "NEEDS_ACTION", 7: "PASS"}
    six = next(r for r in rows(opened) if r["pr"] == 6)
    assert six["finding"].startswith("LAYOUT_NOT_SINGLE_FOLDER: the change modifies README.md")
    assert six["title"] == "Test run"  # unmerged: the submission's own name


def test_a_range_takes_merged_and_unmerged_prs(repo, tmp_path):
    sweep(repo, tmp_path, "--prs", "3-5")
    got = {r["pr"]: (r["folder"], r["verdict"]) for r in rows(tmp_path)}
    assert got == {3: (MERGED, "ILLEGAL"), 5: ("records/track_10min_16mb/2026-04-09_Five", "PASS")}


def test_base_composes_with_merged_prs(repo, tmp_path):
    """--base names the main branch; the PR merged into it is still read against the base it was
    merged into, not against the branch as it is now (an empty change)."""
    sweep(repo, tmp_path, "--prs", "3-5", "--base", "main")
    got = {r["pr"]: (r["folder"], r["verdict"]) for r in rows(tmp_path)}
    assert got == {3: (MERGED, "ILLEGAL"), 5: ("records/track_10min_16mb/2026-04-09_Five", "PASS")}


def test_every_format_holds_the_same_rows(opened):
    data = rows(opened)
    table = list(csv.DictReader(io.StringIO((opened / "sweep.csv").read_text())))
    assert [r["pr"] for r in table] == [str(r["pr"]) for r in data]
    assert [r["verdict"] for r in table] == [r["verdict"] for r in data]
    md = (opened / "sweep.md").read_text().splitlines()
    assert [line.split(" | ")[0] for line in md if line.startswith("| #")] == [f"| #{r['pr']}" for r in data]
    for r in data:
        review = (opened / r["review"]).read_text()
        assert review.startswith(f"**pgolf review: {r['verdict']}** for `{r['folder']}`")


def test_a_submission_s_strings_stay_inert_in_every_format(opened):
    seven = next(r for r in rows(opened) if r["pr"] == 7)
    assert seven["title"] == HOSTILE
    md_line = next(line for line in (opened / "sweep.md").read_text().splitlines() if line.startswith("| #7 "))
    assert md_line.count(" | ") == 5  # the title's own "|" is escaped
    assert "\\*\\*bold\\*\\*" in md_line and "\\<script\\>" in md_line
    cell = next(r for r in csv.DictReader(io.StringIO((opened / "sweep.csv").read_text())) if r["pr"] == "7")
    assert cell["title"] == "'" + HOSTILE  # a spreadsheet does not read it as a formula
    page = (opened / "sweep.html").read_text()
    assert page.count("</script>") == 2 and HOSTILE not in page


def test_a_rerun_reads_unchanged_cases_from_the_cache(repo, tmp_path):
    out = tmp_path / "out"
    sweep(repo, out, "--open")
    first = {name: (out / name).read_bytes() for name in ("sweep.json", "sweep.md", "sweep.csv", "sweep.html")}
    assert "3 cases (3 from the cache)" in sweep(repo, out, "--open")
    assert {name: (out / name).read_bytes() for name in first} == first
    # PR 5 pushes a new commit that changes a log: only that case is audited again
    work = tmp_path / "work"
    git(repo, "worktree", "add", "-q", "--detach", str(work), "refs/pull/5/head")
    log = work / "records/track_10min_16mb/2026-04-09_Five/train_seed42.log"
    log.write_text(log.read_text().replace("train_time: 588047ms", "train_time: 700000ms"))
    git(work, "commit", "-qam", "rerun")
    git(repo, "update-ref", "refs/pull/5/head", git(work, "rev-parse", "HEAD"))
    assert "3 cases (2 from the cache)" in sweep(repo, out, "--open")
    assert {r["pr"]: r["verdict"] for r in rows(out)}[5] == "ILLEGAL"


def test_bad_selections_are_one_line(repo, tmp_path):
    runner = CliRunner()
    both = runner.invoke(cli, ["sweep", "--repo", str(repo), "--open", "--records"])
    assert both.exit_code == 2 and "give one of --prs A-B, --open, --records" in both.output
    backwards = runner.invoke(cli, ["sweep", "--repo", str(repo), "--prs", "9-3"])
    assert backwards.exit_code == 2 and "not a range of PR numbers" in backwards.output
    empty = runner.invoke(cli, ["sweep", "--repo", str(repo), "--prs", "100-200", "--out", str(tmp_path)])
    assert empty.exit_code == 2
    assert empty.output.startswith("pgolf: ") and "nothing to sweep for --prs 100-200" in empty.output
    plain = runner.invoke(cli, ["sweep", "--repo", str(tmp_path), "--records"])
    assert plain.exit_code == 2 and "Traceback" not in plain.output and plain.output.count("\n") == 1


def _chromium() -> str | None:
    for name in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_the_page_in_a_headless_browser(opened, tmp_path):
    """Every row is there, sorting and filtering work, and the hostile title is text."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium found (Debian: apt-get install chromium-headless-shell)")
    with sync_api.sync_playwright() as p:
        # --no-sandbox: Chromium's own sandbox refuses to run as root; the page is our own file
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda dialog: errors.append("dialog: " + dialog.message))
        page.goto((opened / "sweep.html").as_uri())
        shot = tmp_path / "sweep.png"
        page.screenshot(path=str(shot), full_page=True)
        body = page.locator("tbody tr")
        assert body.count() == len(rows(opened)) == 3
        assert page.text_content("#shown") == "3 of 3 rows"
        assert page.title() == "pgolf sweep" and errors == []
        assert page.locator("tbody tr", has_text=HOSTILE).count() == 1
        page.click("th[data-key=verdict]")
        assert body.first.locator("td").nth(4).text_content() == "NEEDS_ACTION"
        page.click("th[data-key=pr]")
        page.click("th[data-key=pr]")  # the second click reverses
        assert [body.nth(i).locator("td").first.text_content() for i in range(3)] == ["#7", "#6", "#5"]
        page.fill("#filter", "layout_not_single")
        assert body.count() == 1 and page.text_content("#shown") == "1 of 3 rows"
        page.fill("#filter", "")
        page.select_option("#verdict", "PASS")
        assert body.count() == 2
        # PR numbers link to the challenge repository, whatever remote the clone has
        links = page.locator("tbody td.num a")
        assert links.count() >= 1 and all(
            links.nth(i).get_attribute("href").startswith("https://github.com/openai/parameter-golf/pull/")
            for i in range(links.count()))
        # on an 800 px screen nothing scrolls sideways
        page.set_viewport_size({"width": 800, "height": 900})
        page.select_option("#verdict", "")
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1], width
        browser.close()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_the_progress_bar_is_drawn_on_a_terminal_only(repo, tmp_path):
    command = [sys.executable, "-m", "pgolf_cli", "sweep", "--repo", str(repo), "--records", "--no-smoke",
               "-j", "2", "--out", str(tmp_path / "out")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "100"}
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        drawn += chunk
    out, _ = proc.communicate()
    os.close(leader)
    assert proc.returncode == 0 and b"2/2" in drawn and "\u2501".encode() in drawn
    assert b"\x1b" not in out and out.startswith(b"pgolf sweep: 2 cases")
    piped = subprocess.run(command, capture_output=True, env=env)
    assert piped.returncode == 0 and piped.stderr == b"" and b"\x1b" not in piped.stdout
