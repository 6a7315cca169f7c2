"""VAL_DATA_IN_TRAINING: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import order
from audits.legality.judge import WARN, Verdict, recognizer
from audits.legality.values import TRAIN, VAL, is_update
from audits.registry import FAIL, ILLEGAL, Rule, Words, check, found, readme, rules, words
from audits.rules.legality.evidence import findings
from audits.submission import runsettings

RULES = rules(
    Rule("VAL_DATA_IN_TRAINING", FAIL, "legality",
         "Validation tokens never reach training or any state built before evaluation.",
         (readme("FAQ, validation data"),), level=ILLEGAL, place=3),
)

_HINT = ("Train only on fineweb_train_* shards; validation tokens may be trained on only after they "
         "are scored.")
# Its readings (the keys of its words).
TRAINED_BEFORE_SCORED, PREBUILT_TABLE, MIXED_INTO_TRAINING, NEVER_SCORED, THROWN_AWAY = (
    "trained_before_scored", "prebuilt_table", "mixed_into_training", "never_scored", "thrown_away")
WORDS = words(
    "VAL_DATA_IN_TRAINING",
    trained_before_scored=Words(
        "the update at {at} trains on validation tokens, which are scored only later, at {other}",
        _HINT),
    prebuilt_table=Words(
        "a table is filled from validation tokens at {at} before scoring starts, then read while "
        "scoring at {other}: early tokens see statistics of later ones",
        "Fill the table while scoring, with each token added only after it is scored."),
    mixed_into_training=Words("the training update at {at} also trains on validation tokens", _HINT),
    never_scored=Words(
        "the update at {at} trains on validation tokens that were never scored first", _HINT),
    thrown_away=Words(
        "the update at {at} trains on validation tokens that were never scored first, but the "
        "parameters it trains are deleted afterwards (a warm-up on a scratch copy): check that "
        "nothing it touched reaches the scored model",
        "Warm up on training tokens or random ids; the compile does not need validation data."),
)


def _read(e, facts):
    """A pass of its own trained on validation tokens (or a table filled from them) before they are
    scored; an update on validation tokens never scored before it."""
    if e.kind == "judgment" and e.detail == order.TRAINED_BEFORE_SCORED and VAL in e.taint and VAL in e.state:
        kind = PREBUILT_TABLE if "prebuilt" in e.flags else TRAINED_BEFORE_SCORED
        return [Verdict("VAL_DATA_IN_TRAINING", kind, FAIL, e.site, e.other)]
    if not is_update(e) or VAL not in e.taint or e.flags & {"broken", "resolved", "judged", "passed"}:
        return []  # (judged where its order was found; scored before it; or found to break the order)
    if TRAIN not in e.taint and "dropped" in e.flags:
        return [Verdict("VAL_DATA_IN_TRAINING", THROWN_AWAY, WARN, e.site)]
    kind = MIXED_INTO_TRAINING if TRAIN in e.taint else NEVER_SCORED
    return [Verdict("VAL_DATA_IN_TRAINING", kind, FAIL, e.site)]


# A helper's pass that its caller placed after export or training is judged there, by other rules.
recognizer("VAL_DATA_IN_TRAINING", _read, order=True, placed=frozenset(
    {TRAINED_BEFORE_SCORED, PREBUILT_TABLE, MIXED_INTO_TRAINING, NEVER_SCORED, THROWN_AWAY}))


@check("VAL_DATA_IN_TRAINING")
def val_data_in_training(sub, options):
    """What it checks: validation data reaching training or state built before evaluation: an
    update whose loss rests on validation tokens that no earlier score covers (a training loader
    over the `fineweb_val_*` shards, validation batches mixed into training), or a table filled
    from validation tokens in a pass of its own and then read while scoring.

    Why it matters: the README FAQ: "You can't cheat by training on the validation set before you
    evaluate on the validation set"; val-only training was banned for the record track (issue
    #140); a table built from the whole set gives early tokens statistics of later ones (#1017 C1).

    Illegal: `loader = TokenLoader(args.val_files)` feeding the training loop; `batch =
    torch.cat([train_batch, val_tokens[i:j]])`; `counts = build_counts(val_tokens)` before scoring.

    Legal: training on `fineweb_train_*` shards only; a cache updated with each token after it is
    scored.

    Warned: a compile warm-up that steps a scratch adapter on validation tokens and then deletes
    it (`del lora, opt`) before anything is scored: what it learned is thrown away (merged records
    did this), yet a reviewer checks that the base weights it ran through are not changed.

    Also illegal: a launch line (a shipped `.sh` script, the README's commands) that links or copies
    a `fineweb_val_*` shard to a `fineweb_train_*` name, or sets to validation shards a setting
    the script reads with the training shards as its default (`TRAIN_FILES=fineweb_val_*.bin`).

    Known limits: data is recognised by the shard names in string literals and followed through
    assignments, calls, attributes and containers; data read from a path pgolf cannot see (an
    argument on the command line) is not labelled.
    """
    yield from findings(sub, "VAL_DATA_IN_TRAINING")
    for rel, line, text in runsettings.val_as_train(sub):
        yield found("VAL_DATA_IN_TRAINING", f"{rel}:{line} puts a validation shard where the training "
                    "loader reads training shards, so the run trains on validation tokens",
                    file=rel, line=line, evidence=text,
                    hint="Train on the fineweb_train_* shards only.")
