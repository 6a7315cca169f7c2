"""`pgolf review --pr N`: a PR of a local clone, read from refs/pull/N/head with plain git, reviewed
as `pgolf review CHECKOUT --base` reviews a checkout of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pgolf_cli.main import cli
from prrepos import OLD, add_pr, challenge_repo, clone, folder_files, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

NEW = "records/track_10min_16mb/2026-04-09_New"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> Path:
    repo = challenge_repo(tmp_path_factory.mktemp("upstream"))
    add_pr(repo, 5, folder_files(NEW))
    add_pr(repo, 6, {**folder_files(NEW), "README.md": "# challenge, edited\n"})
    add_pr(repo, 7, folder_files("records/track_10min_16mb/2026-04-08_Merged"),
           merge_title="Record: merged run")
    add_pr(repo, 8, folder_files(NEW, train_ms=700_000))  # over the training budget
    return repo


def review(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["review", "--no-smoke", *args])
    return result.exit_code, result.output


def checkout_review(repo: Path, tmp_path: Path, number: int, base: str) -> tuple[int, str]:
    """The same PR reviewed by hand: a checkout of its head, with --base."""
    work = tmp_path / f"checkout{number}"
    git(repo, "worktree", "add", "-q", "--detach", str(work), f"refs/pull/{number}/head")
    return review(str(work), "--base", base)


@pytest.mark.parametrize("number", [5, 6, 8])
def test_a_pr_reviews_as_its_checkout_does_with_base(upstream, tmp_path, number):
    repo = clone(upstream, tmp_path / "clone")
    by_number = review("--pr", str(number), "--repo", str(repo))
    assert by_number == checkout_review(repo, tmp_path, number, "main")
    verdict = by_number[1].splitlines()[0]
    assert {5: "PASS", 6: "NEEDS_ACTION", 8: "ILLEGAL"}[number] in verdict
    assert f"`{NEW}`" in verdict


def test_outside_files_are_findings_of_the_one_folder_rule(upstream, tmp_path):
    code, text = review("--pr", "6", "--repo", str(clone(upstream, tmp_path / "clone")))
    assert code == 1
    assert "#### FAIL `LAYOUT_NOT_SINGLE_FOLDER` at `README.md`" in text


def test_a_merged_pr_is_read_against_the_main_it_was_merged_into(upstream, tmp_path):
    repo = clone(upstream, tmp_path / "clone")
    code, text = review("--pr", "7", "--repo", str(repo))
    merge = git(repo, "log", "-1", "--format=%H", "--grep=#7 ", "main")
    assert (code, text) == checkout_review(repo, tmp_path, 7, f"{merge}^1")
    assert "records/track_10min_16mb/2026-04-08_Merged" in text.splitlines()[0]
    assert "LAYOUT_NOT_SINGLE_FOLDER" not in text.split("### Findings")[-1]


def test_base_composes_with_a_merged_pr(upstream, tmp_path):
    """--base names the branch; a PR merged into it is still read against the base it was merged
    into (read against the branch as it is now, every merged PR would be an empty change)."""
    repo = clone(upstream, tmp_path / "clone")
    assert review("--pr", "7", "--repo", str(repo), "--base", "main") == review("--pr", "7", "--repo", str(repo))


def test_a_missing_pr_ref_is_fetched_from_the_remote(upstream, tmp_path):
    repo = clone(upstream, tmp_path / "clone", with_prs=False)
    assert git(repo, "for-each-ref", "refs/pull/") == ""
    code, text = review("--pr", "6", "--repo", str(repo))
    assert code == 1 and "NEEDS_ACTION" in text.splitlines()[0]
    assert git(repo, "rev-parse", "refs/pull/6/head") == git(upstream, "rev-parse", "refs/pull/6/head")


def test_offline_with_the_refs_present_needs_no_remote(upstream, tmp_path):
    repo = clone(upstream, tmp_path / "clone")
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone"))
    code, text = review("--pr", "5", "--repo", str(repo))
    assert code == 0 and "PASS" in text.splitlines()[0]


def test_a_pr_that_cannot_be_fetched_is_one_line(upstream, tmp_path):
    repo = clone(upstream, tmp_path / "clone", with_prs=False)
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone"))
    code, text = review("--pr", "5", "--repo", str(repo))
    assert code == 2
    assert text.count("\n") == 1 and "Traceback" not in text
    assert text.startswith("pgolf: PR #5: refs/pull/5/head is not in ")
    assert "`git fetch origin refs/pull/5/head` failed: " in text


def test_a_pr_without_a_records_folder(upstream, tmp_path):
    add_pr(upstream, 9, {"README.md": "# only the readme\n"})
    code, text = review("--pr", "9", "--repo", str(clone(upstream, tmp_path / "clone")))
    assert code == 1 and "the change adds no folder under records/track\\_" in text  # markdown: the underscore escaped


def test_pr_and_path_are_exclusive(tmp_path):
    assert review()[0] == 2
    code, text = review(str(tmp_path), "--pr", "3")
    assert code == 2 and "either PATH or --pr N" in text


def test_the_clone_work_tree_is_untouched(upstream, tmp_path):
    repo = clone(upstream, tmp_path / "clone")
    review("--pr", "6", "--repo", str(repo))
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / NEW).exists() and (repo / OLD).is_dir()


def test_a_file_the_clone_lacks_is_a_finding(upstream, tmp_path):
    repo = clone(upstream, tmp_path / "clone")
    git(repo, "repack", "-q", "-a", "-d")
    head = add_pr(repo, 11, {**folder_files(NEW), f"{NEW}/model.ptz": "weights\n" * 50})
    blob = git(repo, "rev-parse", f"{head}:{NEW}/model.ptz")
    (repo / ".git/objects" / blob[:2] / blob[2:]).unlink()  # as a partial clone leaves it
    code, text = review("--pr", "11", "--repo", str(repo))
    assert "model.ptz is in the commit but its content is not in this clone" in text


def test_a_pr_merged_through_another_branch_is_read_against_main_before_it(tmp_path):
    """The PR's head reaches main only through a second parent of a merge off main's first-parent
    line: the base is the main that merge went into."""
    repo = challenge_repo(tmp_path / "upstream")
    add_pr(repo, 13, folder_files(NEW))
    git(repo, "checkout", "-qb", "dev", "main")
    git(repo, "merge", "-q", "--no-ff", "refs/pull/13/head", "-m", "into dev")
    git(repo, "checkout", "-q", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "meanwhile on main")
    git(repo, "merge", "-q", "--no-ff", "dev", "-m", "dev into main")
    code, text = review("--pr", "13", "--repo", str(repo))
    assert (code, text) == checkout_review(repo, tmp_path, 13, "main^1")
    assert code == 0 and f"`{NEW}`" in text.splitlines()[0]
