"""NETWORK_AT_EVAL: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import order
from audits.legality.judge import INFO, WARN, Verdict, recognizer
from audits.legality.values import VAL
from audits.registry import FAIL, ILLEGAL, Rule, Words, check, readme, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("NETWORK_AT_EVAL", FAIL, "legality",
         "No downloads or network calls during evaluation.",
         (readme("FAQ, evaluation"),), level=ILLEGAL, place=17),
)
# Its readings (the keys of its words).
WHILE_SCORING, BEFORE_SCORING = "while_scoring", "before_scoring"
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


def _read(e, facts):
    """A network call once scoring of validation tokens has started; any other network call."""
    if e.kind == "judgment" and e.detail == order.NETWORK_WHILE_SCORING and VAL in e.taint and VAL in e.state:
        return [Verdict("NETWORK_AT_EVAL", WHILE_SCORING, FAIL, e.site, e.other)]
    if e.kind == "net":
        return [Verdict("NETWORK_AT_EVAL", BEFORE_SCORING, WARN, e.site, detail=e.detail)]
    return []


# A script the entry point does not run (a data builder run by hand) is expected to download.
recognizer("NETWORK_AT_EVAL", _read, side_script=INFO)


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
