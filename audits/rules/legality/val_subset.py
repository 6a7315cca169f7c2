"""VAL_SUBSET: the score covers the whole validation split, decided from the logs' token counts."""

from __future__ import annotations

import dataclasses

from audits import legality
from audits.findings import Severity
from audits.legality.judge import INFO, Verdict, recognizer
from audits.legality.values import VAL, is_score, kinds
from audits.registry import FAIL, ILLEGAL, WARN, Rule, Words, check, found, issue, pr, rules, words
from audits.rules.legality.evidence import findings
from audits.submission import runs
from audits.submission.valsplit import FULL_VAL_TOKENS, covers, dataset_key

RULES = rules(
    Rule("VAL_SUBSET", FAIL, "legality",
         "Evaluation covers every validation shard and token.",
         (pr(1854, "scored 17% of the set"), issue(1017)), level=ILLEGAL, place=15),
)


# Its readings (the keys of its words).
DRAWN, DRAWN_BESIDE, DRAWN_NON_RECORD, WHOLE = "drawn", "drawn_beside", "drawn_non_record", "whole"
_HINT = "Score every window of every fineweb_val_*.bin shard, in order, each token once."
WORDS = words(
    "VAL_SUBSET",
    drawn=Words(
        "validation tokens are scored at positions drawn at random at {at} (scored at {other}), and no "
        "score of the run covers every position: a sample of the split, not the split", _HINT),
    drawn_beside=Words(
        "validation tokens are scored at positions drawn at random at {at} (scored at {other}); the run "
        "also scores the split in order ({detail}): check that the claimed score is that one", _HINT),
    drawn_non_record=Words(
        "validation tokens are scored at positions drawn at random at {at} (scored at {other}): a "
        "sample of the split, which a submission outside the record track may report, but not its "
        "score on the split", _HINT),
    whole=Words("validation tokens are scored at {at} in order, not at positions drawn at random"),
)


def _read(e, facts):
    """A score of validation tokens read at positions drawn at random (a sample), or not (a
    score that may cover the split: weighed against the drawn ones, never told)."""
    if not is_score(e) or VAL not in e.taint:
        return []
    draws = kinds(e.taint, "drawn")
    if not draws:
        return [Verdict("VAL_SUBSET", WHOLE, INFO, e.site)]
    return [Verdict("VAL_SUBSET", DRAWN, FAIL, label[1], e.site) for label in draws]


recognizer("VAL_SUBSET", _read)


def _beside(result, record: bool):
    """A sample scored beside a score in order (a quick estimate during training, say) is a WARN
    naming that score; where every score of the run is a sample, each is a FAIL on the record
    track, a WARN outside it (an exploration may report a sample, and say so)."""
    whole = sorted((v.site.inner_fn.script.rel, _line(v.site)) for v in result.of("VAL_SUBSET")
                   if v.kind == WHOLE and not v.unreachable and not v.side_script)
    where = f"{whole[0][0]}:{whole[0][1]}" if whole else ""

    def weigh(v):
        if v.kind != DRAWN or (record and not where):
            return v
        kind = DRAWN_BESIDE if where else DRAWN_NON_RECORD
        return dataclasses.replace(v, kind=kind, detail=where, severity=min(v.severity, WARN),
                                   ungated=v.ungated and min(v.ungated, WARN))
    return weigh


def _line(site) -> int:
    at = site.position()
    return at.start.line if at else 0


@check("VAL_SUBSET")
def val_subset(sub, options):
    """What it checks: the validation token count each log prints (`val_tokens:` or the
    `val_loader:shards ... tokens:` line) is the full FineWeb validation split for the log's
    dataset (sp1024, sp4096, sp8192, CaseOps sp8192, byte260), to within 0.1% (scripts trim the
    tail to whole sequences differently).

    Why it matters: the score is defined on all 50,000 validation documents; PR #1854 scored 17% of
    them (`--val-docs 10000`).

    Illegal: `val_tokens: 9662464` on CaseOps sp8192.

    Legal: `val_tokens: 47851520` on CaseOps sp8192; 45,508,608 on sp4096 (a few sequences trimmed).

    In the code: validation tokens scored at positions drawn at random (`torch.randint`,
    `np.random.choice`, `random.sample`, a generator's `integers`, a permutation cut short,
    `perm[:k]`), read from the data the score's tokens come from, whatever the names or the module
    the draw is in. Where no score of the run covers the split in order, a FAIL at the draw on the
    record track (a WARN outside it); beside such a score (a quick estimate during training), a
    WARN naming it. A permutation of every position, scored through, is the whole split in
    another order; random numbers that index no tokens (random prompts) draw nothing from them.

    Known limits: for a dataset pgolf does not know (a custom tokenizer, the stand-in corpus) the
    count cannot be judged and an INFO note says so; in the code, a fixed number of batches read
    in order from a stream, or a slice of the shard list, is not judged (the whole split may be
    one shard); a random pick among a helper's items that its callers fill from validation data
    (which weights a search perturbs, scored on validation tokens) reads as a sample of them.
    """
    result = legality.analyse(sub)
    yield from findings(sub, "VAL_SUBSET", skip=frozenset({WHOLE}), weigh=_beside(result, sub.record_track))
    for log in runs.completed_logs(sub):
        p = log.parsed
        if p.val_tokens is None:
            continue
        count = p.val_tokens.value
        key = dataset_key(str(p.dataset.value)) if p.dataset is not None else None
        if key in FULL_VAL_TOKENS:
            full = FULL_VAL_TOKENS[key]
            if not covers(count, full):
                yield found("VAL_SUBSET", f"{log.rel}: evaluated {count:,} validation tokens; the full "
                            f"{key} split has {max(full):,} ({100 * count / max(full):.1f}%)",
                            file=log.rel, line=p.val_tokens.line, evidence=p.val_tokens.text,
                            hint="Evaluate on every fineweb_val_*.bin shard, all documents, in order.")
        elif not any(covers(count, full) and count <= max(full) for full in FULL_VAL_TOKENS.values()):
            yield found("VAL_SUBSET", f"{log.rel}: {count:,} validation tokens on a dataset pgolf does "
                        "not know; coverage not judged", severity=Severity.INFO, unchecked=True, file=log.rel,
                        line=p.val_tokens.line, evidence=p.val_tokens.text)
