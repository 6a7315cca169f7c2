"""What plain git says about a clone's PRs: which are merged, under which title, and which PR
brought each records folder."""

from __future__ import annotations

import shutil

import pytest

from pgolf_cli import pulls
from prrepos import OLD, add_pr, challenge_repo, folder_files, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_merged_prs_and_their_titles_from_main_s_history(tmp_path):
    repo = challenge_repo(tmp_path / "repo")
    add_pr(repo, 3, folder_files("records/track_10min_16mb/2026-04-01_A"), merge_title="Record: A")
    add_pr(repo, 4, {"notes.md": "x\n"})  # published, never merged
    git(repo, "commit", "-q", "--allow-empty", "-m", "Fix the leaderboard (#12)")
    git(repo, "commit", "-q", "--allow-empty", "-m", "Merge PR #13: Record: B")
    main = pulls.resolve_base(repo, None)
    assert pulls.merged(repo, main) == {3: "Record: A", 12: "Fix the leaderboard", 13: "Record: B"}
    assert sorted(pulls.pr_heads(repo)) == [3, 4]


def test_each_records_folder_with_the_commit_that_added_it(tmp_path):
    repo = challenge_repo(tmp_path / "repo")
    add_pr(repo, 3, folder_files("records/track_non_record_16mb/2026-04-01_A"), merge_title="Record: A")
    main = pulls.resolve_base(repo, None)
    folders = pulls.record_folders(repo, main)
    assert sorted(folders) == [OLD, "records/track_non_record_16mb/2026-04-01_A"]
    assert (folders[OLD].number, folders[OLD].title) == (None, "base")
    assert (folders["records/track_non_record_16mb/2026-04-01_A"].number,
            folders["records/track_non_record_16mb/2026-04-01_A"].title) == (3, "Record: A")
