"""PAID_PREFIX: the rule, its words and its check."""

from __future__ import annotations

from audits.legality import operators
from audits.legality.judge import Verdict, first_line, recognizer
from audits.legality.values import VAL, kinds
from audits.registry import C1, FAIL, ILLEGAL, Rule, Words, check, pr, readme, rules, words
from audits.rules.legality.evidence import findings

RULES = rules(
    Rule("PAID_PREFIX", FAIL, "legality",
         "Validation tokens are not stored in the artifact.",
         (readme("FAQ, paid prefix"), pr(168), pr(262)), (C1,), level=ILLEGAL, place=4),
)
# Its readings (the keys of its words).
SAVED, ANSWERS_READ = "saved", "answers_read"
WORDS = words(
    "PAID_PREFIX",
    saved=Words(
        "validation tokens are written into the artifact at {at} ({detail})",
        "The artifact may hold only the model and code: remove the validation data from what is "
        "saved."),
    answers_read=Words(
        "the scored validation token is compared at {at} with tokens read back from a compressed "
        "blob: the answers are stored, not predicted",
        "The artifact may hold only the model and code: score every token by the model's "
        "prediction.", origin="the stored tokens are decompressed at {origin}"),
)


def _read(e, facts):
    """The scored validation token compared with tokens stored in the artifact; validation tokens
    written into it."""
    if e.kind == "stored" and operators.is_stored(e.taint) and VAL in e.state:
        unpacked = sorted((label[1] for label in kinds(e.taint, "unpacked")), key=first_line)
        return [Verdict("PAID_PREFIX", ANSWERS_READ, FAIL, e.site, origin=unpacked[0] if unpacked else None)]
    if e.kind == "sink" and VAL in e.taint and operators.written_data(e.taint):
        return [Verdict("PAID_PREFIX", SAVED, FAIL, e.site, detail=e.detail)]
    return []


recognizer("PAID_PREFIX", _read)


@check("PAID_PREFIX")
def paid_prefix(sub, options):
    """What it checks: validation tokens (not scores or statistics of them) passed to a
    serializer or compressor (`torch.save`, `pickle`, `np.save`, `lzma`/`zlib`/`brotli`/`zstd`
    compress) or registered as a module buffer; and a score that reads stored answers: the scored
    token compared with tokens decompressed from a blob (`lzma.decompress`), such as a match
    that scores as free.

    Why it matters: README FAQ: you cannot access validation data during training "by compressing
    it into your 16mb with 'paid prefix'"; PRs #168 and #262 did exactly that (#1017 C1).

    Illegal: `torch.save({"w": state, "prefix": val_tokens[:n]}, f)`;
    `self.register_buffer("memory", val_tokens[:n])`;
    `prefix = np.frombuffer(lzma.decompress(blob), "<u2")`, then
    `nll *= ~(prefix[pos:pos + n] == y[:n])`.

    Legal: saving the model, and tables built from training data; a checkpoint helper writing
    the validation score it is given (`save_checkpoint(model, step, val_bpb)`); a buffer
    registered with `persistent=False`, which the state dict (so the artifact) leaves out.

    Known limits: a value derived from validation tokens through a reduction (a sum, a matrix
    product) is a statistic, not tokens, and is not flagged here.
    """
    yield from findings(sub, "PAID_PREFIX")
