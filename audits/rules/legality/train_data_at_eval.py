"""TRAIN_DATA_AT_EVAL: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import order
from audits.legality.judge import Verdict, recognizer
from audits.legality.values import TRAIN, VAL, is_score
from audits.registry import FAIL, ILLEGAL, Rule, Words, check, readme, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("TRAIN_DATA_AT_EVAL", FAIL, "legality",
         "Training shards are not read during evaluation.",
         (readme("FAQ, evaluation"),), level=ILLEGAL, place=16),
)
# Its readings (the keys of its words).
TRAINS_WHILE_SCORING, IN_SCORE = "trains_while_scoring", "in_score"
WORDS = words(
    "TRAIN_DATA_AT_EVAL",
    trains_while_scoring=Words(
        "the update at {at} trains on training data inside the loop that scores validation tokens "
        "at {other}",
        "Do all training on training data before evaluation; at evaluation adapt only on tokens "
        "already scored."),
    in_score=Words(
        "training data reaches the validation score at {at}",
        "Build anything derived from training data during training and store it in the artifact; "
        "evaluation may not read training shards."),
)


def _read(e, facts):
    """An adaptation on the scored tokens that also trains on training data (a training step on
    training data alone, between periodic validation passes, is the baseline's schedule);
    training data in a score of validation tokens."""
    if e.kind == "judgment" and e.detail == order.MIXED_WITH_OTHER_DATA:
        if TRAIN in e.taint and VAL in e.taint and VAL in e.state:
            return [Verdict("TRAIN_DATA_AT_EVAL", TRAINS_WHILE_SCORING, FAIL, e.site, e.other)]
    elif is_score(e) and VAL in e.taint and TRAIN in e.taint:
        return [Verdict("TRAIN_DATA_AT_EVAL", IN_SCORE, FAIL, e.site)]
    return []


recognizer("TRAIN_DATA_AT_EVAL", _read, order=True)


@check("TRAIN_DATA_AT_EVAL")
def train_data_at_eval(sub, options):
    """What it checks: training data reaching a validation score (a cache or table filled from
    training shards during evaluation and mixed into the scores), and updates on training batches
    inside the loop that scores validation tokens.

    Why it matters: README FAQ: "you aren't allowed to access any training data during
    evaluation, unless you pay for those bits in the <16MB limit".

    Illegal: an eval function that loads `fineweb_train_*` shards to pre-fill an n-gram cache.

    Legal: tables built from training data during training and stored in the artifact, saved
    into it or copied into a buffer the model registers (its state dict carries it).

    Known limits: a table saved to the artifact file and loaded back is not connected to the
    training data it came from (that is the legal path). A registered buffer counts as stored
    whenever it is written, also when filled during evaluation after the export.
    """
    yield from findings(sub, "TRAIN_DATA_AT_EVAL")
