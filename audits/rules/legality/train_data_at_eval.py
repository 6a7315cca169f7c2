"""TRAIN_DATA_AT_EVAL: the rule, its words and its check."""

from __future__ import annotations

from audits.registry import FAIL, ILLEGAL, Rule, Words, check, readme, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("TRAIN_DATA_AT_EVAL", FAIL, "legality",
         "Training shards are not read during evaluation.",
         (readme("FAQ, evaluation"),), level=ILLEGAL),
)
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
