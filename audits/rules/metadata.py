"""Rules that compare submission.json and the logs with each other and with the shipped code."""

from __future__ import annotations

import hashlib

from audits.findings import Severity
from audits.registry import FAIL, NEEDS_ACTION, WARN, Rule, check, found, pgolf, readme, rules
from audits.stats import mean
from audits.submission import ENTRY_SCRIPT, runs
from audits.submission.runsettings import embeds, script_hashes

RULES = rules(
    Rule("SUBMISSION_JSON_INVALID", FAIL, "metadata",
         "submission.json parses as an object with author, github_id, name, date and val_bpb.",
         (readme("Submission Process"),), level=NEEDS_ACTION),
    Rule("SUBMISSION_JSON_MISMATCH", FAIL, "metadata",
         "Claimed val_bpb, per-seed results and byte counts agree with what the logs show.",
         (readme("Submission Process"),), level=NEEDS_ACTION),
    Rule("LOG_SOURCE_MISMATCH", FAIL, "metadata",
         "A log that embeds or names its script's source matches the shipped script.",
         (pgolf("a log whose embedded source differs from the shipped file was produced by other "
                "code, so its numbers do not support this submission"),
          readme("Submission Process")), level=NEEDS_ACTION),
    Rule("FEWER_THAN_3_SEEDS", WARN, "metadata",
         "Record track: at least 3 runs with distinct seeds, one log each, no duplicated log.",
         (readme("Submission Process"),), level=NEEDS_ACTION),
)



# A claimed val_bpb this close to what the logs show is a slip, not a different score: merged
# records claim one seed's score for the mean, 0.0002-0.0006 bpb off (the labelled corpus has
# four), and half the 0.005-nat significance margin is ~0.001 bpb, so no record decision turns
# on it. Further off, and no scored line shows the claim, the claimed pass is not in the logs.
SLIP_BPB = 0.001


@check("SUBMISSION_JSON_INVALID")
def submission_json_invalid(sub, options):
    """What it checks: submission.json parses as a JSON object and has `author`, `github_id`,
    `name`, a `date` in ISO form and a numeric `val_bpb`.

    Why it matters: the README asks for "your name, GitHub ID, val_bpb, and related metadata"; the
    leaderboard is built from these fields. Real files vary a lot (over 150 keys across merged
    records), so the check reads tolerantly and names exactly what is missing.

    Illegal: a JSON array, or text that is not JSON.

    Warned: `"val_bpb": "1.08"` (a string); no `github_id`; `mean_val_bpb` in place of `val_bpb`,
    `run_name` in place of `name`: early records were merged with such fields.

    Legal: the five keys present; any other keys are allowed.

    Known limits: a missing submission.json is MISSING_FILES, not this rule.
    """
    claims = sub.claims
    if claims is None:
        return
    # A file that is not a JSON object cannot be read at all; a missing or renamed field is a
    # warning: early records were merged with their own field names (`run_name`, `mean_val_bpb`).
    severity = None if claims.data is None else Severity.WARN
    for problem in claims.problems:
        key = problem.split("'")[1] if problem.count("'") >= 2 else None
        yield found("SUBMISSION_JSON_INVALID", f"submission.json: {problem}", file="submission.json",
                    line=claims.line_of(key) if key else None, severity=severity,
                    hint="Fix submission.json; `pgolf package` writes it from the logs.")


@check("SUBMISSION_JSON_MISMATCH")
def submission_json_mismatch(sub, options):
    """What it checks: every number submission.json claims agrees with the logs: the headline
    `val_bpb` and `val_loss` with the mean over seeds of each log's final score, each per-seed
    result (`seed_results`, `seeds`, `seed_scores`) with that seed's log, `bytes_total` with the
    logs' artifact totals (one seed's, their mean or their maximum) and `bytes_code` with a code
    size the logs print or the shipped script's size. Scores agree to 1e-4 or the printed precision.

    Why it matters: the leaderboard shows the claim; reviewers rejected submissions whose
    submission.json did not match the logs.

    Illegal: `"val_bpb": 1.0800` with seed logs ending at 1.0812, 1.0815, 1.0809 and no other
    scored metric that averages 1.0800; a seed's `val_bpb` that no scored line of its log shows.

    Warned (merged records carry such slips): `val_loss`, byte counts or step counts that differ
    from the logs (`"bytes_total": 15900000` when the logs print 15,965,978); a result for a seed
    that has no log; a headline that rests on seeds whose logs are not shipped; a `val_bpb` (the
    headline or a seed's) at most 0.001 from the logs' (1.12484502 claimed where the seeds average
    1.12503176): merged records carry differences of 0.0002-0.0006, and half the 0.005-nat
    significance margin is about 0.001 bpb, so no decision turns on such a slip.

    Legal: the mean of the final `_exact` scores, rounded to any precision within 1e-4.

    Known limits: the final score is the last scored metric line of each log; a claim that is the
    mean of another scored metric every log prints (the sliding-window score before a TTT phase)
    is accepted as the author's choice of final score.
    """
    claims = sub.claims
    if claims is None or claims.data is None:
        return
    chosen = runs.headline_logs(sub)
    scores = {seed: log.parsed.score for seed, log in chosen.items()}
    unshipped = sorted(_claimed_seeds(claims) - set(chosen))
    if claims.val_bpb is not None and scores:
        got = mean([s.val_bpb for s in scores.values()])
        tol = runs.tolerance(runs.decimals_of(claims.val_bpb), *(s.decimals for s in scores.values()))
        where = ", ".join(f"{chosen[seed].rel}:{s.line} {s.val_bpb}" for seed, s in scores.items())
        single = [seed for seed, s in scores.items() if abs(s.val_bpb - claims.val_bpb) <= tol]
        if (abs(got - claims.val_bpb) <= tol or _other_metric_agrees(chosen, claims.val_bpb)
                or _per_seed_claims_shown(sub, claims)):
            pass
        elif unshipped:
            yield found("SUBMISSION_JSON_MISMATCH",
                        f"'{claims.val_bpb_key}' {claims.val_bpb} rests on seeds whose logs are not "
                        f"shipped ({', '.join(map(str, unshipped))}); the shipped logs average "
                        f"{got:.8f}", severity=Severity.WARN, file="submission.json",
                        line=claims.line_of(claims.val_bpb_key), evidence=where,
                        hint="Add every seed's log, so that the claim can be checked.")
        elif single and len(scores) > 1:
            seed = single[0]
            yield found("SUBMISSION_JSON_MISMATCH",
                        f"'{claims.val_bpb_key}' {claims.val_bpb} is seed {seed}'s score alone; the "
                        f"mean over {len(scores)} seeds is {got:.8f}", severity=Severity.WARN,
                        file="submission.json", line=claims.line_of(claims.val_bpb_key),
                        evidence=where, hint="Report the mean over seeds as val_bpb.")
        else:
            off = abs(got - claims.val_bpb)
            slip = off <= SLIP_BPB
            yield found("SUBMISSION_JSON_MISMATCH",
                        f"'{claims.val_bpb_key}' is {claims.val_bpb} but the logs' final scores "
                        f"average {got:.8f} (off by {off:.2g}"
                        + (", a slip merged records carry)" if slip else "; no scored line of the "
                           "logs shows the claimed score)"),
                        severity=Severity.WARN if slip else None,
                        file="submission.json", line=claims.line_of(claims.val_bpb_key),
                        evidence=where, hint="Use the mean of the logs' final val_bpb.")
    if claims.val_loss is not None and scores:
        got = mean([s.val_loss for s in scores.values()])
        tol = runs.tolerance(runs.decimals_of(claims.val_loss), *(s.decimals for s in scores.values()))
        single = any(abs(s.val_loss - claims.val_loss) <= tol for s in scores.values())
        if abs(got - claims.val_loss) > tol:
            yield found("SUBMISSION_JSON_MISMATCH",
                        f"'val_loss' is {claims.val_loss} but the logs' final val_loss average {got:.8f}"
                        + (" (it is one seed's value)" if single else ""),
                        severity=Severity.WARN, file="submission.json", line=claims.line_of("val_loss"),
                        hint="Use the mean of the logs' final val_loss.")
    yield from _per_seed(sub, claims, chosen)
    yield from _bytes(sub, claims)


def _claimed_seeds(claims) -> set[int]:
    """The seeds submission.json names: its per-seed results and a plain `seeds` list."""
    listed = claims.data.get("seeds") if isinstance(claims.data, dict) else None
    seeds = set(claims.per_seed)
    if isinstance(listed, list):
        seeds |= {s for s in listed if isinstance(s, int) and not isinstance(s, bool)}
    return seeds


def _other_metric_agrees(chosen, claim: float) -> bool:
    """Whether the claim is the mean of another scored metric every log prints (the sliding-window
    score, when a later phase printed its own): the author chose which final score to report."""
    logs = [log.parsed for log in chosen.values()]
    common = set.intersection(*({m.base for m in p.metrics if m.kind == "scored"} for p in logs))
    for base in common:
        values = [[m for m in p.metrics if m.kind == "scored" and m.base == base][-1] for p in logs]
        tol = runs.tolerance(runs.decimals_of(claim), *(m.decimals for m in values))
        if abs(mean([m.val_bpb for m in values]) - claim) <= tol:
            return True
    return False


def _log_showing(sub, claim: float):
    """A completed log with a scored metric equal to `claim` (to its printed precision)."""
    for log in runs.completed_logs(sub):
        for m in log.parsed.metrics:
            if m.kind == "scored" and abs(m.val_bpb - claim) <= runs.tolerance(runs.decimals_of(claim), m.decimals):
                return log
    return None


def _per_seed_claims_shown(sub, claims) -> bool:
    """Whether the headline is the mean of per-seed results that logs of the folder show: a study
    that ships the logs of several configurations claims the one it names, seed by seed."""
    values = [fields["val_bpb"] for fields in claims.per_seed.values() if "val_bpb" in fields]
    if not values or len(values) != len(claims.per_seed):
        return False
    tol = runs.tolerance(runs.decimals_of(claims.val_bpb), *map(runs.decimals_of, values))
    return abs(mean(values) - claims.val_bpb) <= tol and all(_log_showing(sub, v) for v in values)


def _per_seed(sub, claims, chosen):
    for seed, fields in sorted(claims.per_seed.items()):
        log = chosen.get(seed)
        if log is None:
            yield found("SUBMISSION_JSON_MISMATCH", f"claims a result for seed {seed} but no "
                        "completed log has that seed", file="submission.json", severity=Severity.WARN,
                        line=claims.line_of(str(seed)), hint="Add that seed's log or drop the claim.")
            continue
        p = log.parsed
        score = p.score
        comparisons = [
            ("val_bpb", fields.get("val_bpb"), score.val_bpb,
             runs.tolerance(score.decimals, runs.decimals_of(fields.get("val_bpb", 0.0))), score.line),
            ("val_loss", fields.get("val_loss"), score.val_loss,
             runs.tolerance(score.decimals, runs.decimals_of(fields.get("val_loss", 0.0))), score.line),
            ("artifact_bytes", fields.get("artifact_bytes"), p.artifact_bytes and p.artifact_bytes.value, 0.5,
             p.artifact_bytes and p.artifact_bytes.line),
            ("steps", fields.get("steps"), p.step_count, 0.5, p.stop and p.stop.line),
        ]
        for name, claimed, actual, tol, line in comparisons:
            if claimed is None or actual is None:
                continue
            if name == "val_bpb" and _other_metric_agrees({seed: log}, claimed):
                continue
            shown_by = _log_showing(sub, claimed) if name == "val_bpb" else None
            if shown_by is not None:
                yield found("SUBMISSION_JSON_MISMATCH", f"seed {seed}: 'val_bpb' {_fmt(claimed)} is "
                            f"shown by {shown_by.rel}, not by {log.rel}, which has that seed",
                            severity=Severity.WARN, file="submission.json",
                            line=claims.line_of(str(seed)), evidence=f"{shown_by.rel}, {log.rel}:{line}",
                            hint="Name the seed each result's log ran with.")
                continue
            if abs(float(actual) - claimed) > tol:
                hard = name == "val_bpb" and abs(float(actual) - claimed) > SLIP_BPB
                yield found("SUBMISSION_JSON_MISMATCH", f"seed {seed}: '{name}' is {_fmt(claimed)} "
                            f"but {log.rel} shows {_fmt(actual)}", file="submission.json",
                            severity=None if hard else Severity.WARN,
                            line=claims.line_of(str(seed)), evidence=f"{log.rel}:{line}",
                            hint=f"Copy {name} from the log.")


def _fmt(value) -> str:
    return str(int(value)) if float(value) == int(value) else str(value)


def _bytes(sub, claims):
    logs = [log.parsed for log in runs.completed_logs(sub)]
    totals = [p.artifact_bytes.value for p in logs if p.artifact_bytes is not None]
    shipped = sum(len(s.data) for s in sub.scripts.values()) if sub.scripts else None
    if claims.bytes_total is not None and totals:
        accepted = set(totals) | {max(totals), round(mean(totals)), int(mean(totals))}
        for code in (claims.bytes_code, shipped):
            if code is not None:
                accepted |= {p.model_bytes.value + code for p in logs if p.model_bytes is not None}
        if claims.bytes_total not in accepted:
            yield found("SUBMISSION_JSON_MISMATCH", f"'bytes_total' is {claims.bytes_total} but the "
                        f"logs' artifact totals are {', '.join(map(str, totals))}",
                        severity=Severity.WARN, file="submission.json", line=claims.line_of("bytes_total"),
                        hint="Use a seed's 'Total submission size' line, their mean or their maximum.")
    if claims.bytes_code is not None:
        sizes = set()
        for p in logs:
            for value in (p.code_bytes, p.code_bytes_compressed, p.code_bytes_uncompressed):
                if value is not None:
                    sizes.add(value.value)
        if shipped is not None:
            sizes.add(shipped)
        if sizes and claims.bytes_code not in sizes:
            # Without the shipped script the claim may still be its true size: a reviewer should look.
            yield found("SUBMISSION_JSON_MISMATCH", f"'bytes_code' is {claims.bytes_code} but the logs "
                        f"{'and the shipped scripts ' if shipped is not None else ''}give "
                        f"{', '.join(map(str, sorted(sizes)))}",
                        severity=Severity.WARN, file="submission.json", line=claims.line_of("bytes_code"),
                        hint="Use the size of the shipped script.")


@check("LOG_SOURCE_MISMATCH")
def log_source_mismatch(sub, options):
    """What it checks: when a log embeds its script's source (the baseline's `log0(code)`, the
    later `Source code:` block) or names its hash (pgolf's `code_sha256:` line), that source is the
    shipped entry script. Without a shipped script, all logs must at least carry the same source.

    Why it matters: numbers prove something only about the code that produced them. A log from an
    earlier version of the script supports a different submission.

    Illegal: a `code_sha256:` line naming a file that is not the shipped script; logs naming
    several different scripts next to one shipped wrapper.

    Warned: seed 2's log embeds a source that differs from `train_gpt.py` (merged records carry
    logs of an earlier revision, with a default changed since); three logs embedding two
    different sources when no script is shipped.

    Legal: every log's embedded source equals the shipped file (trailing newlines ignored), or
    another shipped script (an ablation's logs next to its own script).

    Known limits: an embedded source is compared with the shipped file as shipped. A `code_sha256:`
    line is compared with the shipped file and, for a self-extracting wrapper, with its payload;
    a wrapper whose payload is the minified form of the file that ran (`pgolf package`'s default)
    matches the `code_minified_sha256:` line pgolf's trainer also logs. A log without that line
    next to such a wrapper cannot be compared from the folder alone: a WARN, not a FAIL. Logs that
    embed nothing cannot be checked. When only a 16-hex marker of the hash survives, the prefix is
    compared. A `Source code:` block with no closing rule runs into the log's own lines; the
    shipped file is compared with its beginning.
    """
    script = sub.scripts.get(ENTRY_SCRIPT)
    hashes = script_hashes(script) if script is not None else set()
    payload = None if script is None else script.unwrapped
    ran = set() if script is None else {hashlib.sha256(script.data).hexdigest()} | (
        set() if payload is None else {hashlib.sha256(payload.encode("utf-8")).hexdigest()})
    embedded = []
    unverifiable: dict[str, list] = {}  # hash a log names -> logs, when the shipped file is a wrapper
    for log in sub.logs:
        p = log.parsed
        minified = p.code_minified_sha256
        if minified is not None and minified.value in ran:
            pass  # the wrapper ships the minified form of the file this log ran
        elif p.code_sha256 is not None and script is not None and p.code_sha256.value not in ran:
            if payload is None or minified is not None:
                yield found("LOG_SOURCE_MISMATCH", f"{log.rel} names a script hash that is not the "
                            f"shipped {ENTRY_SCRIPT}'s", file=log.rel, line=p.code_sha256.line,
                            evidence=p.code_sha256.text,
                            hint="Ship the exact file that ran, or rerun with the shipped file.")
            else:
                unverifiable.setdefault(p.code_sha256.value, []).append(log)
        src = p.embedded_source
        if src is None:
            continue
        if src.open_ended is None:  # an open-ended block's hash holds the log's own lines
            embedded.append((log, src))
        if script is None:
            continue
        if embeds(src, script) or any(embeds(src, other) for other in sub.scripts.values()):
            continue
        length = "its end unmarked" if src.open_ended is not None else f"{src.lines} lines"
        yield found("LOG_SOURCE_MISMATCH", f"{log.rel} embeds a source ({length}) that differs "
                    f"from the shipped {ENTRY_SCRIPT} and from every other shipped script; merged "
                    "records carry logs of an earlier revision, so a reviewer compares the two",
                    severity=Severity.WARN, file=log.rel, line=src.line,
                    evidence=f"embedded sha256 {src.sha256[:16]}, shipped {sorted(hashes)[0][:16]}",
                    hint="Ship the exact file that ran, or rerun with the shipped file.")
    yield from _wrapper_of_unknown_file(unverifiable)
    if script is None and len({src.sha256[:16] for _, src in embedded}) > 1:
        groups: dict[str, list[str]] = {}
        for log, src in embedded:
            groups.setdefault(src.sha256[:16], []).append(log.rel)
        detail = "; ".join(f"{h}: {', '.join(logs)}" for h, logs in groups.items())
        yield found("LOG_SOURCE_MISMATCH", f"the logs embed {len(groups)} different sources",
                    severity=Severity.WARN, evidence=detail,
                    hint="Rerun every seed with the one script you ship.")


def _wrapper_of_unknown_file(unverifiable: dict[str, list]):
    """Logs naming a file that a self-extracting entry script may be a minified form of: one WARN
    when they all name the same file, a FAIL when they name several (one wrapper runs one file)."""
    if not unverifiable:
        return
    logs = [log for group in unverifiable.values() for log in group]
    first = logs[0].parsed.code_sha256
    names = ", ".join(log.rel for log in logs)
    if len(unverifiable) > 1:
        yield found("LOG_SOURCE_MISMATCH", f"the logs name {len(unverifiable)} different scripts "
                    f"({names}), but one {ENTRY_SCRIPT} is shipped", file=logs[0].rel,
                    line=first.line, evidence="; ".join(f"{log.rel}: {h[:16]}" for h, group in
                                                         unverifiable.items() for log in group),
                    hint="Rerun every seed with the one script you ship.")
        return
    yield found("LOG_SOURCE_MISMATCH", f"{names} name the script that ran; the shipped {ENTRY_SCRIPT} "
                "is a self-extracting wrapper whose payload is not that file byte for byte (a "
                "minified form), so the two cannot be compared here", severity=Severity.WARN,
                file=logs[0].rel, line=first.line, evidence=first.text,
                hint="Ask for the file that ran and compare its minified form with the payload, or "
                "ship the readable file (`pgolf package --code-form plain`).")


@check("FEWER_THAN_3_SEEDS")
def fewer_than_3_seeds(sub, options):
    """What it checks: on the record track, completed logs from at least 3 distinct seeds, and no
    log file that is a byte-for-byte copy of another.

    Why it matters: the README asks for enough runs "to show at p < 0.01" a real improvement and
    says 3 runs are usually enough; a copied log counts one run twice.

    Illegal: one seed; `train.log` identical to `train_seed1337.log` (counted once, reported).

    Legal: seeds 42, 314, 999 with one log each. Extra reruns of a seed are noted, not flagged.

    Known limits: the seed is read from the log (`seed:` line or the Hyperparameters block), else
    from the file name.
    """
    by_hash: dict[str, list[str]] = {}
    for log in sub.logs:
        by_hash.setdefault(log.sha256, []).append(log.rel)
    for copies in by_hash.values():
        if len(copies) > 1:
            yield found("FEWER_THAN_3_SEEDS", f"{' and '.join(copies)} are the same log",
                        file=copies[-1], hint="Keep one copy; each log should be a separate run.")
    if not sub.record_track:
        return
    groups = runs.by_seed(sub)
    seeds = sorted(s for s in groups if s is not None)
    if len(seeds) < 3:
        listed = ", ".join(map(str, seeds)) or "none"
        yield found("FEWER_THAN_3_SEEDS", f"{len(seeds)} distinct seed(s) with a completed log "
                    f"({listed}); the record track expects at least 3",
                    hint="Run more seeds (e.g. 3 in total) and add each log.")
    for seed, logs in groups.items():
        if seed is not None and len(logs) > 1:
            yield found("FEWER_THAN_3_SEEDS", f"seed {seed} has {len(logs)} logs: "
                        + ", ".join(log.rel for log in logs), severity=Severity.INFO)
