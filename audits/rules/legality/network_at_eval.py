"""NETWORK_AT_EVAL: the rule, its words and its check."""

from __future__ import annotations

from audits.registry import FAIL, ILLEGAL, Rule, Words, check, readme, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("NETWORK_AT_EVAL", FAIL, "legality",
         "No downloads or network calls during evaluation.",
         (readme("FAQ, evaluation"),), level=ILLEGAL),
)
WORDS = words(
    "NETWORK_AT_EVAL",
    while_scoring=Words(
        "a network call at {at} runs while validation tokens are being scored (a score at {other})",
        "Evaluation must use only the artifact: remove the download or call."),
    before_scoring=Words(
        "network call {detail} at {at}, before any score is taken",
        "Remove it, or make sure it never runs in the evaluation run: the artifact must be "
        "self-contained."),
)


@check("NETWORK_AT_EVAL")
def network_at_eval(sub, options):
    """What it checks: network calls (urllib, requests, http.client, sockets, Hugging Face hub,
    `datasets.load_dataset`, torch.hub, shell commands with curl/wget/pip) reachable from the entry
    point. One made once scoring has started fails; one reachable before scoring is a warning;
    one in code the entry point never runs (a data-preparation script) is INFO.

    Why it matters: README FAQ: "No external downloads, training dataset access, or network calls
    are allowed during evaluation. The artifact must be fully self-contained."

    Illegal: `urllib.request.urlretrieve(url, path)` inside the evaluation loop.

    Legal: downloads in a separate data-preparation script.

    Known limits: a call made through a library pgolf does not know is not seen.
    """
    yield from findings(sub, "NETWORK_AT_EVAL")
