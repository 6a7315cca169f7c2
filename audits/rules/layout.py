"""Rules about where the submission sits and which files it has."""

from __future__ import annotations

import datetime
import re

from audits.findings import Severity
from audits.registry import FAIL, NEEDS_ACTION, WARN, Rule, check, found, pr, readme, rules
from audits.submission import ENTRY_SCRIPT, TRACKS, display_name

RULES = rules(
    Rule("LAYOUT_NOT_SINGLE_FOLDER", FAIL, "layout",
         "The change adds exactly one folder under records/track_10min_16mb/ or "
         "records/track_non_record_16mb/ and touches nothing else.",
         (readme("Submission Process"), pr(1204, "its merge deleted another record"),
          pr(1143), pr(1289), pr(1319)), level=NEEDS_ACTION),
    Rule("FOLDER_NAME", WARN, "layout",
         "The folder is named YYYY-MM-DD_description, with a real date and no spaces.",
         (pr(1667, "renamed on review"),), level=NEEDS_ACTION),
    Rule("MISSING_FILES", FAIL, "layout",
         "README.md, submission.json, at least one train log and the entry script are present.",
         (readme("Submission Process"),), level=NEEDS_ACTION),
)


_TRACK_DIRS = tuple(f"records/{name}/" for name in TRACKS)
_FOLDER = re.compile(r"^(\d{4})-(\d{2})-(\d{2})_(\S+)$")
_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})_")
_CLAIMS_VARIANT = re.compile(r"^submission[-_.\w]*\.json$", re.I)  # submission_ternary.json


@check("LAYOUT_NOT_SINGLE_FOLDER")
def layout_not_single_folder(sub, options):
    """What it checks: with `--base REF` (a checkout) or `--changed-files FILE` (the PR's changed
    paths, as `git diff --name-status` prints them), the change adds files in exactly one new
    folder `records/track_10min_16mb/<name>/` (or `track_non_record_16mb`) and touches nothing
    else: no edits, deletions or additions anywhere outside it.

    Why it matters: the README asks for "a pull request that only adds a new folder". PR #1204's
    merge deleted another record's folder; PRs #1143, #1289 and #1319 were refused for extra or
    misplaced files.

    Illegal: a file added, edited or deleted outside the records folders (a root script, notes, a
    data file); a folder placed under `parameter-golf/records/...`; an existing record edited or
    deleted; further records folders bundled in a change made after the launch days.

    Legal: only `A` (added) paths, all under one new folder of a track.

    Warned, as merged records predate the convention: further records folders added whole in one
    change when every folder is dated in the launch days (up to 2026-03-20): the organizers
    merged such bundles then, and refused them afterwards.

    Known limits: without `--base` or `--changed-files` the change is unknown and only an INFO
    note is made. Renames are reported as a deletion plus an addition. The launch-days reading
    goes by the dates in the folders' names, not the PR's date.
    """
    if sub.changes is None:
        yield found("LAYOUT_NOT_SINGLE_FOLDER", "the change was not checked (no --base or --changed-files "
                    "given)", severity=Severity.INFO, unchecked=True,
                    hint="Run `pgolf audit REPO --base main` on a checkout, or give the PR's changed "
                    "paths with --changed-files, to check the PR's layout.")
        return
    folders = sorted({_folder_of(path) for status, path in sub.changes if status == "A" and _folder_of(path)})
    if len(folders) > 1:
        launch_days = all(_launch_days(f) for f in folders)
        yield found("LAYOUT_NOT_SINGLE_FOLDER",
                    f"the change adds {len(folders)} records folders: " + ", ".join(folders)
                    + (" (all dated in the launch days, when such bundles were merged)" if launch_days else ""),
                    severity=Severity.WARN if launch_days else None,
                    evidence="\n".join(folders[:20]), hint="Open one PR per submission.")
    outside = [(s, p) for s, p in sub.changes if not _folder_of(p)]
    misplaced = sorted({m.group(1) for s, p in outside if (m := _MISPLACED.match(p))})
    for folder in misplaced[:20]:
        yield found("LAYOUT_NOT_SINGLE_FOLDER", f"the change adds {display_name(folder)}, a records folder "
                    "not at the repository's records/", file=display_name(folder),
                    evidence=display_name(folder), hint="Move it to records/track_*/ at the repository root.")
    outside = [(s, p) for s, p in outside if not _MISPLACED.match(p)]
    for status, path in outside[:20]:
        verb = {"A": "adds", "M": "modifies", "D": "deletes"}.get(status, f"changes ({status})")
        yield found("LAYOUT_NOT_SINGLE_FOLDER", f"the change {verb} {display_name(path)}, outside "
                    "any records folder", file=display_name(path), evidence=f"{status}\t{display_name(path)}",
                    hint="Revert it: a submission PR only adds its own folder.")
    if len(outside) > 20:
        yield found("LAYOUT_NOT_SINGLE_FOLDER", f"... and {len(outside) - 20} more paths outside the folder")
    inside_not_added = [(s, p) for s, p in sub.changes if _folder_of(p) and s != "A"]
    for status, path in inside_not_added[:20]:
        yield found("LAYOUT_NOT_SINGLE_FOLDER", f"the change {'deletes' if status == 'D' else 'modifies'}"
                    f" {display_name(path)}, which already exists in the base",
                    file=display_name(path), evidence=f"{status}\t{display_name(path)}",
                    hint="A submission adds a new folder; it never edits or deletes existing records.")
    if not folders and not misplaced:
        yield found("LAYOUT_NOT_SINGLE_FOLDER", "the change adds no folder under records/track_*/",
                    hint="Put the submission in records/track_10min_16mb/YYYY-MM-DD_name/.")


# The organizers merged PRs that bundled several records folders in the challenge's first days
# and refused them from then on (the git history of the challenge's main branch).
LAUNCH_DAYS_END = datetime.date(2026, 3, 20)
_MISPLACED = re.compile(r"^(.+/records/track_[^/]+/[^/]+)/")


def folder_date(name: str) -> datetime.date | None:
    """The date a records folder's name starts with (`YYYY-MM-DD_...`), None without a real one."""
    m = _DATED.match(name)
    try:
        return datetime.date.fromisoformat(m.group(1)) if m else None
    except ValueError:
        return None


def _launch_days(folder: str) -> bool:
    """Is the folder's name dated within the launch days?"""
    date = folder_date(folder.rsplit("/", 1)[-1])
    return date is not None and date <= LAUNCH_DAYS_END


def _folder_of(path: str) -> str | None:
    for track_dir in _TRACK_DIRS:
        if path.startswith(track_dir):
            rest = path[len(track_dir):]
            if "/" in rest:
                return track_dir + rest.split("/", 1)[0]
    return None


@check("FOLDER_NAME")
def folder_name(sub, options):
    """What it checks: the folder's name is `YYYY-MM-DD_description`: a real calendar date, an
    underscore, then a description without spaces.

    Why it matters: reviewers enforce it (PR #1667 was asked to rename `2026_04_16_...`); one
    merged folder with spaces in its name holds only a log and breaks tools.

    Illegal: `2026_04_16_MyRun`, `2026-04-16 My Run`, `MyRun`, `2026-02-30_x`.

    Legal: `2026-04-09_SP8192_3LayerRecur_ParResid_QK525_LegalTTT`.

    Known limits: the date is not compared with the PR's date.
    """
    name = sub.name
    m = _FOLDER.match(name)
    if not m:
        yield found("FOLDER_NAME", f"folder name {display_name(name)!r} is not YYYY-MM-DD_description",
                    file=".", evidence=display_name(name),
                    hint="Rename it, e.g. " + datetime.date.today().isoformat() + "_" +
                    re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:60])
        return
    try:
        datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        yield found("FOLDER_NAME", f"folder name {name!r} starts with an impossible date",
                    file=".", evidence=name, hint="Use the real date the submission was made.")


@check("MISSING_FILES")
def missing_files(sub, options):
    """What it checks: the folder holds README.md, submission.json, at least one train log and the
    entry script (`train_gpt.py`; on the non-record track any top-level .py script).

    Why it matters: the README's Submission Process lists these four; "submissions without the full
    set of requirements will not be accepted".

    Illegal: a folder with only a log; results without the script that produced them; a
    record-track folder with no train log, or whose logs all end before a final score.

    Legal: the four present; extra helper files are fine.

    Warned, as merged records predate the convention: the metadata under another name
    (`submission_ternary.json`) or the script under another name (`train_gpt_cuda_ternary.py`) on
    the record track; no train log on the non-record track (studies were merged without one).

    Known limits: a train log is any .log/.txt file with recognisable log lines; an empty or
    unrelated text file does not count.
    """
    hint = "Add it to the folder; `pgolf package` builds all four from the runs."
    if not sub.has_file("README.md"):
        yield found("MISSING_FILES", "missing README.md", hint=hint)
    if not sub.has_file("submission.json"):
        named = sorted(e.rel for e in sub.entries if e.kind == "file" and _CLAIMS_VARIANT.match(e.rel))
        if named:
            yield found("MISSING_FILES", f"no submission.json; the metadata is in {named[0]}",
                        severity=Severity.WARN, file=named[0], hint="Rename it to submission.json.")
        else:
            yield found("MISSING_FILES", "missing submission.json", hint=hint)
    if not sub.logs:
        yield found("MISSING_FILES", "missing a train log (*.log or *.txt with the run's output)"
                    + ("" if sub.record_track else "; the non-record track merged studies without one"),
                    severity=None if sub.record_track else Severity.WARN, hint=hint)
    elif sub.record_track and not any(log.parsed.completed for log in sub.logs):
        names = ", ".join(log.rel for log in sub.logs[:5])
        yield found("MISSING_FILES", f"no complete train log: {names} end before a final scored "
                    "pass, so no log shows the score", file=sub.logs[0].rel,
                    hint="Add each seed's whole log, up to its final val_bpb line.")
    top_level_py = sorted(rel for rel in sub.scripts if "/" not in rel)
    if ENTRY_SCRIPT in sub.scripts or (top_level_py and not sub.record_track):
        return
    if top_level_py:
        yield found("MISSING_FILES", f"no {ENTRY_SCRIPT}; the script is named {top_level_py[0]}",
                    severity=Severity.WARN, file=top_level_py[0],
                    hint=f"Rename the entry script to {ENTRY_SCRIPT}.")
    else:
        yield found("MISSING_FILES", f"missing {ENTRY_SCRIPT}", hint=hint)
