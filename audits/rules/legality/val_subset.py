"""VAL_SUBSET: the score covers the whole validation split, decided from the logs' token counts."""

from __future__ import annotations

from audits.findings import Severity
from audits.registry import FAIL, ILLEGAL, Rule, check, found, issue, pr, rules
from audits.submission import runs
from audits.submission.valsplit import FULL_VAL_TOKENS, covers, dataset_key

RULES = rules(
    Rule("VAL_SUBSET", FAIL, "legality",
         "Evaluation covers every validation shard and token.",
         (pr(1854, "scored 17% of the set"), issue(1017)), level=ILLEGAL, place=15),
)


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

    Known limits: for a dataset pgolf does not know (a custom tokenizer, the stand-in corpus) the
    count cannot be judged and an INFO note says so; the code-level check of which shards are read
    belongs to the legality analysis.
    """
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
