"""Turn the events a function's summary holds into verdicts: rule, severity, the place, the words.

Events carry what their data rests on; a rule fires only where that data is validation tokens
(after the callers' arguments were substituted), so a helper that trains and scores training
batches is never blamed. A verdict from code the entry point never reaches is INFO.
"""

from __future__ import annotations

import dataclasses

from audits.findings import Severity
from audits.legality.values import (
    GEN,
    TARGET,
    TRAIN,
    VAL,
    Event,
    Site,
    Taint,
    is_score,
    is_update,
    kinds,
    non_default,
)

FAIL, WARN, INFO = Severity.FAIL, Severity.WARN, Severity.INFO
ISSUE_1336 = "https://github.com/openai/parameter-golf/issues/1336"
# Rules whose evidence is the code's own shape: in unreachable code they are still worth a note.
# The others turn on which data a value holds, which only the run's call chain decides.
SHAPE_RULES = {"TTT_SCORE_AFTER_ADAPT", "SLOT", "ETLB", "NGRAM_TARGET_IN_KEY", "NGRAM_NOT_NORMALIZED",
               "TWO_PASS_RESCORE", "BYTE_MIXTURE_NOT_NORMALIZED", "REALIZED_TOKEN_GATE",
               "BOS_CROSS_DOC_LEAK", "BPB_BYTE_ACCOUNTING"}
PR_1698 = "https://github.com/openai/parameter-golf/pull/1698"


@dataclasses.dataclass(frozen=True)
class Verdict:
    rule: str
    severity: Severity
    message: str  # may name {at} (the line of `site`) and {other} (the line of `other`)
    hint: str
    site: Site
    other: Site | None = None
    link: str | None = None  # for contested readings: where the question is open


def verdicts(events: list[Event], reachable: bool, hypothetical: bool = False,
             side_script: bool = False) -> list[Verdict]:
    """Verdicts on one root's events. `hypothetical`: the root is unreachable code whose
    parameters are read as validation data, to show what it would do if it ran. `side_script`:
    it runs from another script in the folder (a data or artifact builder the author ran by
    hand): a warning at most, and downloads there are expected (INFO)."""
    resolved = {id(e.site.inner) for e in events if is_update(e) and "resolved" in e.flags}
    out: list[Verdict] = []
    for event in events:
        found = _event(event, resolved)
        settings = non_default(event)
        if settings:  # not run with the default settings: a reviewer asks whether it was on
            note = f" (only when {' and '.join(settings)}; not with the default settings)"
            found = [dataclasses.replace(v, severity=min(v.severity, WARN), message=v.message + note)
                     for v in found]
        out += found
    if side_script:
        out = [dataclasses.replace(v, severity=INFO if v.rule == "NETWORK_AT_EVAL" else min(v.severity, WARN),
                                   message=v.message + " (in a script the entry point does not run)")
               for v in out]
    if not reachable:
        out = [dataclasses.replace(v, severity=INFO, message=v.message + (
            " (in code the entry point never reaches)"))
               for v in out if not hypothetical or (v.severity > INFO and v.rule in SHAPE_RULES)]
    return out


def _val(taint: Taint) -> bool:
    return VAL in taint


def _event(e: Event, resolved: set[int]) -> list[Verdict]:
    kind = e.kind
    if kind == "judgment":
        return _judgment(e, resolved)
    if is_update(e):
        return _update(e)
    if is_score(e) and _val(e.taint):
        return _score(e)
    if kind == "lookup" and _val(e.taint):
        return _lookup(e)
    if kind == "calib":
        return _calib(e)
    if kind == "sink" and _val(e.taint):
        return [Verdict("PAID_PREFIX", FAIL, f"validation tokens are written into the artifact at "
                        f"{{at}} ({e.detail})", "The artifact may hold only the model and code: "
                        "remove the validation data from what is saved.", e.site)]
    if kind == "net":
        return [Verdict("NETWORK_AT_EVAL", WARN, f"network call {e.detail} at {{at}}, before any "
                        "score is taken", "Remove it, or make sure it never runs in the evaluation "
                        "run: the artifact must be self-contained.", e.site)]
    if kind == "mix":
        return _mix(e)
    if kind == "ratio" and _val(e.taint):
        return [Verdict("BPB_BYTE_ACCOUNTING", WARN, "bits per byte at {at} divide by a fixed "
                        "bytes-per-token ratio instead of counting bytes", "Count each scored "
                        "token's bytes from the tokenizer's pieces (or a per-token byte sidecar) "
                        "and divide the summed bits by the summed bytes.", e.site)]
    if kind == "pieces":
        return _pieces(e)
    if kind == "tilt" and _val(e.taint):
        return _tilt(e)
    if kind == "smoothing" and _val(e.taint):
        return [Verdict("NGRAM_NOT_NORMALIZED", FAIL, "the n-gram probability at {at} adds the same "
                        "constant to a count and to its total; summed over the vocabulary it "
                        "exceeds 1", "Add k to every count and k times the vocabulary size to the "
                        "total (or renormalize over the vocabulary).", e.site)]
    return []


def _judgment(e: Event, resolved: set[int]) -> list[Verdict]:
    rule = e.detail
    if rule == "TRAIN_DATA_AT_EVAL":
        if not (TRAIN in e.taint and _val(e.state)):
            return []
        return [Verdict(rule, FAIL, "the update at {at} trains on training data inside the loop "
                        "that scores validation tokens at {other}", "Do all training on training "
                        "data before evaluation; at evaluation adapt only on tokens already scored.",
                        e.site, e.other)]
    if not (_val(e.taint) and _val(e.state)):
        return []  # the update trained on, and the score scored, validation data
    again = "again" in e.flags
    if rule == "MULTI_EPOCH":
        if id(e.site.inner) not in resolved:
            return []
        return [Verdict("TTT_SCORE_AFTER_ADAPT", WARN, "the update at {at} runs several passes "
                        "over the same already-scored tokens (multi-epoch adaptation)",
                        "No score changes, but reviewers have asked for a ruling; one pass per "
                        "chunk avoids the question.", e.site, link=PR_1698)]
    if rule == "PREQUANT_TTT_ON_VAL":
        return [Verdict(rule, FAIL, "validation tokens are trained on at {at} and scored after "
                        "that, at {other}", "Do not fine-tune on validation tokens before scoring "
                        "them; to adapt at test time, score each chunk first, then train on it.",
                        e.site, e.other)]
    if rule == "TTT_SCORE_AFTER_ADAPT":
        message = ("tokens trained on at {at} are scored again at {other} in a later pass of "
                   "the loop" if again else
                   "the update at {at} trains on tokens before they are scored at {other}")
        return [Verdict(rule, FAIL, message, "Score each chunk once, under torch.no_grad(), before "
                        "any update that uses it; train on it only after that (and keep any epoch "
                        "loop inside, after the scoring).", e.site, e.other)]
    if rule == "SLOT":
        if "context_only" in e.flags:
            return [Verdict(rule, WARN, "parameters made for each window are fitted at {at} on the "
                            "window's context only, then used to score its new tokens at {other}",
                            "Context-only SLOT has no ruling yet (issue #1336); expect review.",
                            e.site, e.other, link=ISSUE_1336)]
        return [Verdict(rule, FAIL, "parameters made for each window are optimized at {at} on "
                        "the window's own targets, then used to score them at {other}", "Remove "
                        "the per-window optimization: a window's score may not depend on its own "
                        "tokens.", e.site, e.other)]
    if rule == "ETLB":
        if "context_only" in e.flags:
            return [Verdict(rule, WARN, "a bias carried across windows is fitted at {at} on each "
                            "window's context only, then applied to score its new tokens at {other}",
                            "Fitting on already-scored context has no ruling yet (the question of "
                            "issue #1336); expect review.", e.site, e.other, link=ISSUE_1336)]
        return [Verdict(rule, FAIL, "a bias kept across windows is fitted at {at} on tokens it then "
                        "helps score at {other}", "Update the bias only after a window is scored, "
                        "so it only affects later windows.", e.site, e.other)]
    if rule == "TWO_PASS_RESCORE":
        return [Verdict(rule, FAIL, "a first pass over the validation tokens scores them and fills "
                        "the table at {at}; a second pass reads it at {other} and scores them "
                        "again", "Score in one left-to-right pass; update the table only with "
                        "tokens already scored.", e.site, e.other)]
    if rule == "VAL_DATA_IN_TRAINING" and "prebuilt" not in e.flags:
        return [Verdict(rule, FAIL, "the update at {at} trains on validation tokens, which are "
                        "scored only later, at {other}", "Train only on fineweb_train_* shards; "
                        "validation tokens may be trained on only after they are scored.",
                        e.site, e.other)]
    if rule == "VAL_DATA_IN_TRAINING":
        return [Verdict(rule, FAIL, "a table is filled from validation tokens at {at} before "
                        "scoring starts, then read while scoring at {other}: early tokens see "
                        "statistics of later ones", "Fill the table while scoring, with each token "
                        "added only after it is scored.", e.site, e.other)]
    if rule == "NETWORK_AT_EVAL":
        return [Verdict(rule, FAIL, "a network call at {at} runs while validation tokens are being "
                        "scored (a score at {other})", "Evaluation must use only the artifact: remove "
                        "the download or call.", e.site, e.other)]
    return []


def _update(e: Event) -> list[Verdict]:
    if not _val(e.taint):
        return []
    if "resolved" in e.flags:
        if _tensor_only(e.state):
            return [Verdict("ETLB", INFO, "the bias updated at {at} is fitted only on tokens scored "
                            "before, at {other}", "", e.site, e.other)]
        return [Verdict("TTT_SCORE_AFTER_ADAPT", INFO, "legal score-first adaptation at {at}: "
                        "the tokens it trains on were scored before, at {other}", "", e.site, e.other)]
    if "judged" in e.flags:
        return []
    if TRAIN in e.taint:
        message = "the training update at {at} also trains on validation tokens"
    else:
        message = "the update at {at} trains on validation tokens that were never scored first"
    return [Verdict("VAL_DATA_IN_TRAINING", FAIL, message, "Train only on fineweb_train_* shards; "
                    "validation tokens may be trained on only after they are scored.", e.site)]


def _tensor_only(state: Taint) -> bool:
    """The update changes tensors made for it (a bias), not model or adapter parameters."""
    made = [label[2] for label in state if label[0] == "state"]
    return bool(made) and all(kind == "tensor" for kind in made)


def _score(e: Event) -> list[Verdict]:
    """What reached a score of validation tokens: a gate read from the scored token (a table
    lookup always counts; a comparison only where it weighted a probability, since a padding mask
    on the NLL is a comparison too), its bytes, a pick between losses, training data."""
    out = []
    byte_mixture = kinds(e.taint, "bytes")
    gates = {label[1] for label in kinds(e.taint, "gated")}
    gates |= {label[1] for label in kinds(e.taint, "gate") if label[2] == "lookup"}
    for site in sorted(gates, key=lambda s: s.path) if not byte_mixture else ():
        out.append(Verdict("REALIZED_TOKEN_GATE", FAIL, "the weight at {at} is read from the token "
                           "being scored and changes that token's probability (scored at {other})",
                           "Compute gates and mixture weights from the context only (tokens "
                           "before the one scored).", site, e.site))
    for label in byte_mixture:
        out.append(Verdict("BYTE_MIXTURE_NOT_NORMALIZED", FAIL, "probabilities of the scored "
                           "token's own bytes ({at}) are mixed into its score at {other}; the "
                           "result is not a distribution over the token vocabulary",
                           "Mix distributions over the whole vocabulary and normalize before "
                           "reading the target's probability.", label[1], e.site))
    for label in kinds(e.taint, "select"):
        out.append(Verdict("TWO_PASS_RESCORE", FAIL, "the score at {other} keeps the better of two "
                           "predictions, chosen at {at} by comparing their losses on the true token",
                           "Commit to one prediction per token, or mix predictors with weights "
                           "computed from the context only.", label[1], e.site))
    if TRAIN in e.taint:
        out.append(Verdict("TRAIN_DATA_AT_EVAL", FAIL, "training data reaches the validation score "
                           "at {at}", "Build anything derived from training data during training "
                           "and store it in the artifact; evaluation may not read training shards.",
                           e.site))
    return out


def _lookup(e: Event) -> list[Verdict]:
    if TARGET in e.taint:
        return [Verdict("NGRAM_TARGET_IN_KEY", FAIL, "the table read at {at} uses a key hashed from "
                        "the token being scored, so only that token's entry is looked up",
                        "Hash the context only, read a distribution over the whole vocabulary (or "
                        "a hint token), renormalize, then evaluate it at the target.", e.site)]
    if "module" in e.flags:
        return []
    return [Verdict("NGRAM_TARGET_IN_KEY", INFO, "n-gram table read at {at} with a key hashed "
                    "from the context only", "", e.site)]


def _calib(e: Event) -> list[Verdict]:
    if _val(e.taint):
        return [Verdict("GPTQ_CALIB_ON_VAL", FAIL, "quantization calibration at {at} runs the model "
                        "on validation tokens", "Calibrate on training batches inside the training "
                        "budget, or on text the model generates itself.", e.site)]
    if TRAIN in e.taint:
        return [Verdict("GPTQ_CALIB_ON_VAL", INFO, "quantization calibrated on training data at {at}",
                        "", e.site)]
    if GEN in e.taint:
        return [Verdict("GPTQ_CALIB_ON_VAL", INFO, "quantization calibrated on self-generated "
                        "tokens at {at}", "", e.site)]
    return []


def _mix(e: Event) -> list[Verdict]:
    if "masked" in e.flags:
        return [Verdict("BOS_CROSS_DOC_LEAK", INFO, "previous-token mixing at {at} is masked at "
                        "document starts", "", e.site)]
    return [Verdict("BOS_CROSS_DOC_LEAK", FAIL, "previous-token mixing at {at} is not masked at "
                    "document starts: the first token of a document sees the last token of the "
                    "one before", "Zero the gate where the current token is BOS (id 1), e.g. "
                    "g = g.masked_fill(input_ids[:, 1:] == 1, 0.0) before mixing.", e.site)]


def _pieces(e: Event) -> list[Verdict]:
    missing = []
    if "byte_fallback" not in e.flags:
        missing.append("byte-fallback pieces (<0x41>) are counted by the length of their text, "
                       "6 bytes instead of 1")
    if "leading_space" not in e.flags:
        missing.append("the leading '\u2581' is not turned into one space byte")
    if not missing:
        return [Verdict("BPB_BYTE_ACCOUNTING", INFO, "bytes per token at {at} are counted from the "
                        "tokenizer's pieces (byte fallback and leading space handled)", "", e.site)]
    return [Verdict("BPB_BYTE_ACCOUNTING", WARN, "the bytes-per-token table built at {at}: "
                    + "; ".join(missing), "Count byte-fallback pieces as 1 byte, strip '\u2581' and "
                    "count it as one space byte (only where the previous token is not a boundary).",
                    e.site)]


def _tilt(e: Event) -> list[Verdict]:
    if "normalized" in e.flags:
        return [Verdict("NGRAM_NOT_NORMALIZED", INFO, "token tilt at {at} is renormalized over "
                        "the vocabulary", "", e.site)]
    return [Verdict("NGRAM_NOT_NORMALIZED", FAIL, "the tilt at {at} boosts the scored token when "
                    "it matches the hint but never renormalizes: the probabilities no longer sum "
                    "to 1", "Divide by Z = 1 + p_hint * (exp(beta) - 1) (or subtract log Z from "
                    "the log-probability).", e.site)]
