"""Input hygiene: what the loader met that it could not read as given (audits/submission).

The loader records each problem with its rule when it meets it (it reads the folder once); the
checks here turn the records into findings, so these rules run, are selected and summarised like
every other."""

from __future__ import annotations

from audits.registry import FAIL, NEEDS_ACTION, WARN, Rule, check, found, pgolf, rules

RULES = rules(
    Rule("FILE_UNREADABLE", WARN, "input",
         "Every file pgolf has to read is text of a sane size.",
         (pgolf("a binary, oversized or undecodable file where text is expected cannot be "
                "audited, so the report says so instead of guessing"),), level=NEEDS_ACTION),
    Rule("SYMLINK_OUTSIDE", FAIL, "input",
         "No symbolic link points outside the submission folder.",
         (pgolf("a link out of the folder ships something the folder does not contain; pgolf "
                "never follows it"),), level=NEEDS_ACTION),
    Rule("BAD_FILENAME", WARN, "input",
         "File names have no control characters, newlines or spaces.",
         (pgolf("such names break git tooling and review"),), level=NEEDS_ACTION),
    Rule("AUDIT_TIME_LIMIT", FAIL, "input",
         "The audit of the folder finishes within its time limit.",
         (pgolf("a check cut short says nothing about the folder; what was not checked has to be "
                "read by hand"),), level=NEEDS_ACTION),
)


def _recorded(sub, rule: str):
    for problem in sub.problems:
        if problem.rule == rule:
            yield found(rule, problem.message, severity=problem.severity, **problem.fields)


@check("FILE_UNREADABLE")
def file_unreadable(sub, options):
    """What it checks: every file the audit reads (logs, scripts, submission.json, README,
    requirements) is text of a sane size: not binary, not over its size bound, UTF-8, listable,
    and the folder has at most a few thousand files nested a few levels deep.

    Why it matters: a file pgolf cannot read cannot be audited; the report says so instead of
    guessing. Bytes that are not UTF-8 are read as U+FFFD and noted (INFO); a script is read as
    Python reads it, UTF-8 unless it declares another encoding (PEP 263), and one Python could
    not decode will not run.

    Illegal: a 2 GB "log", a checkpoint named `train.log`, a script saved as Latin-1 without
    declaring it.

    Legal: text files of a few MB at most.

    Known limits: sizes are bounded per file (16 MiB for a log, 8 MiB for a script); only the
    first part of a longer file is read.
    """
    yield from _recorded(sub, "FILE_UNREADABLE")


@check("SYMLINK_OUTSIDE")
def symlink_outside(sub, options):
    """What it checks: no symbolic link in the folder points outside it. A link inside the folder
    is noted (INFO); pgolf never follows links either way.

    Why it matters: a link out of the folder ships something the folder does not contain (and a
    reviewer's checkout may resolve it to a file on their own machine).

    Illegal: `data -> /home/me/fineweb`, `train_gpt.py -> ../other_record/train_gpt.py`.

    Legal: the files themselves, copied into the folder.

    Known limits: only links are judged; hard links are indistinguishable from files.
    """
    yield from _recorded(sub, "SYMLINK_OUTSIDE")


@check("BAD_FILENAME")
def bad_filename(sub, options):
    """What it checks: file names in the folder have no whitespace or control characters.

    Why it matters: such names break git tooling, shell commands in READMEs and review.

    Illegal: `train log.txt`, a name holding a newline.

    Legal: letters, digits, '.', '_' and '-'.

    Known limits: none; the check reads every name the loader lists.
    """
    yield from _recorded(sub, "BAD_FILENAME")


@check("AUDIT_TIME_LIMIT")
def audit_time_limit(sub, options):
    """What it checks: the whole audit (reading the folder and every check) finished within its
    time limit (`--time-limit`, default 900 s).

    Why it matters: a check stopped part-way says nothing; the report keeps every finding made
    before the limit, and this finding names the check that was stopped and those never run, which
    a reviewer then reads by hand.

    Illegal: a folder whose files keep a check busy past the limit (a log or source built to make
    a parser slow).

    Legal: any folder the audit reads in minutes.

    Known limits: the limit is wall-clock time on the auditing machine; a loaded machine reaches
    it sooner. It needs the main thread (the command line's case); elsewhere nothing is bounded.
    """
    yield from _recorded(sub, "AUDIT_TIME_LIMIT")
