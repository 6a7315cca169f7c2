"""BPB_BYTE_ACCOUNTING: the rule, its words and its check."""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from audits import legality
from audits.legality import bytetable
from audits.findings import Severity
from audits.legality.judge import FAIL, INFO, Verdict, recognizer
from audits.legality.values import VAL, kinds
from audits.registry import ILLEGAL, WARN, Rule, Words, check, found, issue, pr, rules, words
from audits.rules.legality.evidence import findings
from audits.submission import runs, trees
from audits.submission.valsplit import FULL_VAL_TOKENS, VAL_TEXT_BYTES, covers, dataset_key, implied_text_bytes

RULES = rules(
    Rule("BPB_BYTE_ACCOUNTING", WARN, "legality",
         "Bytes per token come from the tokenizer's pieces (leading space, byte fallback, "
         "control tokens handled).",
         (issue(1017, "section V"), pr(1806, "Scylla record removed"), issue(897)), level=ILLEGAL, place=14),
)

_FALLBACK = "byte-fallback pieces (<0x41>) are counted by the length of their text, 6 bytes instead of 1"
_SPACE = "the leading '\u2581' is not turned into one space byte"
_HINT = ("Count byte-fallback pieces as 1 byte, strip '\u2581' and count it as one space byte (only "
         "where the previous token is not a boundary).")
# Its readings (the keys of its words).
(NO_BYTE_FALLBACK, NO_LEADING_SPACE, NO_FALLBACK_NO_SPACE, SPACE_TWICE, FIXED_RATIO, FIXED_RATIO_BESIDE, PIECES,
 ARRAY_FILE, TABLE_INFLATED, TABLE_UNCHECKED, TABLE_MATCHES, LOG_OVERCOUNT, SIDECAR) = (
    "no_byte_fallback", "no_leading_space", "no_fallback_no_space", "space_twice", "fixed_ratio",
    "fixed_ratio_beside", "pieces", "array_file", "table_inflated", "table_unchecked", "table_matches",
    "log_overcount", "sidecar")
FIXED_RATIO_NON_RECORD = "fixed_ratio_non_record"
TRANSFORMED_LOG, TRANSFORMED_CODE = "transformed_log", "transformed_code"
# The readings that count each token's bytes (well or not): a fixed ratio beside one of them may be
# a diagnostic, and a reviewer checks which of the two the claimed score divides by.
_COUNTED = frozenset({NO_BYTE_FALLBACK, NO_LEADING_SPACE, NO_FALLBACK_NO_SPACE, SPACE_TWICE, PIECES, ARRAY_FILE})
WORDS = words(
    "BPB_BYTE_ACCOUNTING",
    no_byte_fallback=Words(f"the bytes-per-token table built at {{at}}: {_FALLBACK}", _HINT),
    no_leading_space=Words(f"the bytes-per-token table built at {{at}}: {_SPACE}", _HINT),
    no_fallback_no_space=Words(f"the bytes-per-token table built at {{at}}: {_FALLBACK}; {_SPACE}", _HINT),
    space_twice=Words(
        "the bytes-per-token table built at {at} counts a piece's leading '\u2581' as a byte "
        "(`len(piece[1:]) + 1`) and also marks the piece in a leading-space table, whose flag the "
        "evaluation adds as one more byte: every space is counted twice",
        "Keep the space out of the table (`len(piece[1:].encode())`) and let the flag add it, only "
        "where the previous token is not a boundary."),
    fixed_ratio=Words(
        "bits per byte at {at} divide the validation loss by a fixed bytes-per-token ratio instead of "
        "counting the bytes of the scored tokens, and the run counts bytes nowhere else",
        "Count each scored token's bytes from the tokenizer's pieces (or a per-token byte sidecar) "
        "and divide the summed bits by the summed bytes."),
    fixed_ratio_non_record=Words(
        "bits per byte at {at} divide the validation loss by a fixed bytes-per-token ratio instead of "
        "counting the bytes of the scored tokens: an approximation, which a submission outside the "
        "record track may report, but not bits per byte of the validation text",
        "Count each scored token's bytes from the tokenizer's pieces (or a per-token byte sidecar) "
        "and divide the summed bits by the summed bytes."),
    fixed_ratio_beside=Words(
        "bits per byte at {at} divide the validation loss by a fixed bytes-per-token ratio instead of "
        "counting the bytes of the scored tokens; the run also counts bytes per token ({detail}): "
        "check that the claimed score divides by those",
        "Count each scored token's bytes from the tokenizer's pieces (or a per-token byte sidecar) "
        "and divide the summed bits by the summed bytes."),
    pieces=Words(
        "bytes per token at {at} are counted from the tokenizer's pieces (byte fallback and leading "
        "space handled)"),
    array_file=Words("bytes per token at {at} are read from an array file ({detail})"),
    table_inflated=Words(
        "the run reads its bytes-per-token table from {detail} at {at}, and it counts more bytes "
        "than the tokens of {tokenizer} stand for: {entries}",
        "Build the table from the tokenizer (byte-fallback pieces 1 byte, control pieces 0, other "
        "pieces their UTF-8 bytes without the leading '\u2581'), or ship one that matches it."),
    table_unchecked=Words(
        "the run reads its bytes-per-token table from {detail} at {at}, which was not checked "
        "against the tokenizer: {why}",
        "Ship the tokenizer the table was built from beside it (a SentencePiece .model or a "
        "TokenMonster .vocab), or build the table from the tokenizer at run time."),
    table_matches=Words(
        "the run reads its bytes-per-token table from {detail} at {at}; it counts no more bytes "
        "than the tokens of {tokenizer} stand for"),
    log_overcount=Words(
        "{log}: val_loss {loss} and val_bpb {bpb} at line {line} over its {tokens:,} validation "
        "tokens divide by {implied:,.0f} bytes, {over:.1f}% more than the {text:,} bytes of the "
        "validation text: the byte count is inflated, so bits per byte are understated",
        "Count each scored token's bytes from the tokenizer's pieces (byte-fallback pieces 1 byte, "
        "the leading '\u2581' one space byte) or from the validation byte sidecar: over the whole "
        "split they sum to the text's bytes."),
    transformed_log=Words(
        "{at}: the run scored tokens of CaseOps-transformed text ({detail}), and neither its code nor "
        "its logs name the per-token byte sidecar (fineweb_val_bytes_*.bin): its bytes per token "
        "can only come from the transformed pieces, which count the case markers and not the "
        "original text's bytes",
        "Read fineweb_val_bytes_*.bin beside the validation shards and divide the summed bits by "
        "the summed original bytes of the scored tokens."),
    transformed_code=Words(
        "{at} reads CaseOps-transformed data ({detail}), and the run's code names no per-token byte "
        "sidecar (fineweb_val_bytes_*.bin): bytes per token counted from the transformed pieces "
        "count the case markers, not the original text's bytes",
        "Read fineweb_val_bytes_*.bin beside the validation shards and divide the summed bits by "
        "the summed original bytes of the scored tokens."),
    sidecar=Words(
        "{at} names the per-token byte sidecar (fineweb_val_bytes_*.bin): bytes per token can be "
        "counted from it, as the original text's bytes each validation token stands for (how a "
        "transformed tokenizer input such as CaseOps keeps bits per byte on the original text)"),
)
# The byte sidecar's files, as the CaseOps records and `pgolf data shards --caseops` name them:
# fineweb_val_bytes_NNNNNN.bin beside each fineweb_val_NNNNNN.bin.
_SIDECAR_NAME = re.compile(r"val_bytes_")
# The challenge's CaseOps exports (reversible case transforms of the text), as their folders name
# them: fineweb10B_sp8192_caseops, fineweb10B_sp8192_lossless_caps_caseops_v1_reserved.
_TRANSFORMED_DATA = re.compile(r"fineweb10B_\w*caseops\w*", re.I)
# How far over the validation text's bytes a log's implied byte count may be before it is a FAIL.
_OVERCOUNT = 0.01


def _read(e, facts):
    """A bytes-per-token table built from tokenizer pieces; bits divided by a fixed ratio; a
    bytes-per-token array loaded from a file (weighed against the folder's shipped arrays)."""
    if e.kind == "ratio" and VAL in e.taint and kinds(e.taint, "loss"):
        return [Verdict("BPB_BYTE_ACCOUNTING", FIXED_RATIO, FAIL, e.site)]
    if e.kind == "array_file":
        return [Verdict("BPB_BYTE_ACCOUNTING", ARRAY_FILE, INFO, e.site, detail=e.detail)]
    if e.kind != "pieces":
        return []
    if "space_twice" in e.flags:
        return [Verdict("BPB_BYTE_ACCOUNTING", SPACE_TWICE, FAIL, e.site)]
    fallback, space = "byte_fallback" in e.flags, "leading_space" in e.flags
    if fallback and space:
        return [Verdict("BPB_BYTE_ACCOUNTING", PIECES, INFO, e.site)]
    kind = NO_BYTE_FALLBACK if space else NO_LEADING_SPACE if fallback else NO_FALLBACK_NO_SPACE
    return [Verdict("BPB_BYTE_ACCOUNTING", kind, WARN, e.site)]


recognizer("BPB_BYTE_ACCOUNTING", _read, shape=True)


@check("BPB_BYTE_ACCOUNTING")
def bpb_byte_accounting(sub, options):
    """What it checks: bits per byte divided by a fixed bytes-per-token literal, and a
    bytes-per-token table built from tokenizer pieces that does not count byte-fallback pieces
    as 1 byte or does not turn the leading '▁' into one space byte. A table that handles both is
    noted as INFO.

    Why it matters: the byte count is the denominator of the score; the Scylla record was removed
    for a +4.13% byte count (PR #1806), issue #897 shows the leading-space error.

    Illegal: `val_bpb = val_loss / math.log(2) / 3.6`; `lut[i] = len(sp.id_to_piece(i).encode())`.

    A fixed ratio is a number the validation loss is divided (or multiplied) by on its way to
    bits per byte that no data decides: a literal, a name or class attribute bound to one, a
    setting's default (`float(os.environ.get("BPT", "3.7"))`), also with ln 2 in one divisor
    (`loss / (math.log(2) * BPT)`) or scaling the loss before it (`loss * 0.27 / math.log(2)`),
    and inside a helper the loss is passed to (judged at its calls). In a run that counts bytes
    per token nowhere else it is a FAIL on the record track (a WARN outside it, where an
    exploration may report an approximation); beside a table or sidecar the run also counts
    with, a WARN naming it (it may be a quick estimate beside the score). A training loss turned
    into bits per byte for the progress log is not read.

    A script that names the per-token byte sidecar's files (`fineweb_val_bytes_*.bin`, in code,
    not in a comment or docstring) is noted as INFO: bytes per token can come from it.

    Tokens of a reversible text transform (the challenge's CaseOps exports, whose pieces hold
    case markers) stand for the original text's bytes only through the per-token byte sidecar:
    where the logs' dataset is a CaseOps export (by its name, or by its validation token count,
    47,851,520, whatever the folder is called) and neither the run's code nor its logs name the
    sidecar, the bytes can only come from the transformed pieces (a FAIL at the log's dataset
    line); with no log to say, a CaseOps data path in the run's code with no sidecar named is a
    WARN at that path.

    A table the run reads with `numpy.load` from a .npz/.npy shipped in the folder (an array
    named for bytes, e.g. `base_bytes`) is read without running anything (pickles refused, sizes
    bounded) and checked against the shipped tokenizer: a SentencePiece .model (byte-fallback
    pieces 1 byte, control pieces 0, others their UTF-8 bytes without the leading '▁'), else a
    TokenMonster .vocab (a token at most its own bytes). An entry counting more is a FAIL at the
    load; a table with no tokenizer to check against, or a file that is not plain arrays, a
    WARN; a matching one INFO. The run then scores with the file, so a table it builds from
    pieces elsewhere is not certified.

    Each completed log is also read for the bytes its scores divide by: val_loss x validation
    tokens / (ln 2 x val_bpb). The validation text has 151,078,222 bytes whatever the tokenizer
    (records' logs give 151.02-151.08 M), so a log that scored the whole split of a known
    dataset and divides by over 1% more is a FAIL at the line read, with the token count's line:
    PR #1734's table counts the leading space twice (177.8 M, +17.7%), PR #1771 counts the bytes of
    CaseOps' transformed text (164.6 M). The figures are read at the median of the model's plain
    evaluations (training-loop and diagnostic lines), else of the scored lines where two or more
    agree within 0.5%: a byte-level mixture prints bits per byte that its val_loss does not give.

    Legal: the baseline's `build_sentencepiece_luts` (is_byte -> 1, strip '▁', count it when the
    previous token is not a boundary); a per-token byte sidecar.

    Known limits: tables built without a loop over token ids, and custom tokenizers, are not
    judged; a shipped table is matched to the run by its array's name, not by tracing the path
    the run opens; a TokenMonster token of several non-ASCII bytes is not judged (capitals may
    lengthen it); that a sidecar's counts reach the denominator, and that they sum to the original
    text's bytes, is not traced (`pgolf data verify` checks a sidecar against its shards); the log
    check knows the text of the challenge's exports only (sp1024 after launch week, sp4096, sp8192,
    CaseOps sp8192, byte260), so a custom tokenizer's log, or one scored on a subset, is not read.
    """
    result = legality.analyse(sub)
    loads = [v for v in result.of("BPB_BYTE_ACCOUNTING")
             if v.kind == ARRAY_FILE and not v.unreachable and not v.side_script]
    shipped = bytetable.tables(sub) if loads else []
    sidecars = list(_sidecar_findings(sub))
    # the run scores with the shipped table: a table built from pieces elsewhere certifies nothing;
    # an array load is told by the table it loads (below)
    yield from findings(sub, "BPB_BYTE_ACCOUNTING",
                        skip=frozenset({ARRAY_FILE, PIECES} if shipped else {ARRAY_FILE}),
                        weigh=_beside(_counted(result, sidecars), sub.record_track))
    if shipped:
        yield from _table_findings(sub, loads, shipped)
    yield from sidecars
    yield from _transformed_findings(sub, result, sidecars)
    yield from _log_findings(sub)


def _counted(result, sidecars) -> str:
    """Where the run counts bytes per token (a table built from pieces or loaded from a file, or
    the byte sidecar named in its code), as `file:line`; empty where it counts them nowhere."""
    sites = sorted((v.site.inner_fn.script.rel, _line(v.site)) for v in result.of("BPB_BYTE_ACCOUNTING")
                   if v.kind in _COUNTED and not v.unreachable and not v.side_script)
    sites += [(f.file, f.line) for f in sidecars if f.file in result.run]
    return f"{sites[0][0]}:{sites[0][1]}" if sites else ""


def _beside(counted: str, record: bool):
    """A fixed ratio in a run that also counts bytes may be a diagnostic beside the score: a WARN
    naming where the bytes are counted. In a run that counts them nowhere, every bits-per-byte
    figure it prints divides by the ratio: a FAIL on the record track, where the figure is a
    record claim; a WARN elsewhere (an exploration may report an approximation, and say so)."""
    def weigh(v):
        if v.kind != FIXED_RATIO or (record and not counted):
            return v
        kind = FIXED_RATIO_BESIDE if counted else FIXED_RATIO_NON_RECORD
        return dataclasses.replace(v, kind=kind, detail=counted, severity=min(v.severity, WARN),
                                   ungated=v.ungated and min(v.ungated, WARN))
    return weigh


def _table_findings(sub, loads, shipped):
    """One finding per shipped byte table, at the array load that names it (else the first): where
    that load takes the array out by name, else the load."""
    exp = None
    for table in shipped:
        site = _load_for(loads, table)
        at = _read_of(site, table) or site.position()
        line = at.start.line if at else None
        script = site.inner_fn.script
        if table.values is None:
            kind, severity, fields = TABLE_UNCHECKED, Severity.WARN, {"why": table.error}
        else:
            exp = bytetable.expected(sub) if exp is None else exp
            if isinstance(exp, str):
                kind, severity, fields = TABLE_UNCHECKED, Severity.WARN, {"why": exp}
            else:
                entries = bytetable.inflated(table, exp)
                kind = TABLE_INFLATED if entries else TABLE_MATCHES
                severity = Severity.FAIL if entries else Severity.INFO
                fields = {"tokenizer": exp.rel, "entries": entries}
        words = WORDS[kind]
        shipped_script = sub.scripts.get(script.rel)
        yield found("BPB_BYTE_ACCOUNTING",
                    words.message.format(at=f"line {line}", detail=table.label, **fields),
                    severity=severity, file=script.rel, line=line, column=at and at.start.column,
                    evidence=f"{line}: {script.excerpt(line, line)}" if line else None,
                    hint=words.hint,
                    via=shipped_script.via(line) if shipped_script is not None and line else None,
                    confidence="high")


def _log_findings(sub):
    """One FAIL per completed log whose own figures divide by over 1% more bytes than the
    validation text has (the figures carry four or more decimals; honest logs land within 0.05%)."""
    for log in runs.completed_logs(sub):
        p = log.parsed
        read = implied_text_bytes(p)
        if read is None or read[0] <= VAL_TEXT_BYTES * (1 + _OVERCOUNT):
            continue
        implied, m = read
        words = WORDS[LOG_OVERCOUNT]
        yield found("BPB_BYTE_ACCOUNTING",
                    words.message.format(log=log.rel, loss=f"{m.val_loss:g}", bpb=f"{m.val_bpb:g}",
                                         line=m.line, tokens=int(p.val_tokens.value), implied=implied,
                                         over=100 * (implied / VAL_TEXT_BYTES - 1), text=VAL_TEXT_BYTES),
                    severity=Severity.FAIL, file=log.rel, line=m.line,
                    evidence=f"{p.val_tokens.line}: {p.val_tokens.text} / {m.line}: {m.text}",
                    hint=words.hint, confidence="high")


def _load_for(loads, table):
    """The array load whose function names the table's array (or its file), else the first."""
    for v in loads:
        fn = v.site.inner_fn
        code = fn.script.module.code_for_node(fn.node) if fn.node is not None else ""
        if (table.name and table.name in code) or table.rel.rsplit("/", 1)[-1] in code:
            return v.site
    return min(loads, key=lambda v: (v.site.inner_fn.script.rel, _line(v.site))).site


def _read_of(site, table):
    """Where the load's function takes the table's array out of the file by its name
    (`data["base_bytes"]`), at or after the load: the line that shows which array the run counts
    bytes with. None for an array file of one array (.npy), or where no such name is written."""
    fn, load = site.inner_fn, site.position()
    if not table.name or fn.node is None or load is None:
        return None
    names = (fn.script.position(n) for n in _string_nodes(fn.node)
             if isinstance(n, cst.SimpleString) and n.evaluated_value == table.name)
    return min((at for at in names if at is not None and at.start.line >= load.start.line),
               key=lambda at: (at.start.line, at.start.column), default=None)


def _string_nodes(node):
    for child in node.children:
        yield child
        yield from _string_nodes(child)


def _line(site) -> int:
    at = site.position()
    return at.start.line if at else 0


def _strings(node):
    """The string literals that make up expression `node`, if it is a string."""
    if isinstance(node, cst.ConcatenatedString):
        yield from _strings(node.left)
        yield from _strings(node.right)
    elif isinstance(node, cst.FormattedString):
        yield from (p for p in node.parts if isinstance(p, cst.FormattedStringText))
    elif isinstance(node, cst.SimpleString):
        yield node


def _transformed_findings(sub, result, sidecars):
    """Tokens of CaseOps-transformed text scored with no byte sidecar in sight: where do the bytes
    in the denominator come from? Not from the original text. Told by the logs' dataset (a FAIL at
    the first such log), else by the data path the run's code reads (a WARN: a reviewer checks
    that path runs)."""
    if any(f.file in result.run for f in sidecars) or any(_SIDECAR_NAME.search(log.text) for log in sub.logs):
        return
    for log in runs.completed_logs(sub):
        said = _transformed_in(log.parsed)
        if said is not None:
            value, detail = said
            words = WORDS[TRANSFORMED_LOG]
            yield found("BPB_BYTE_ACCOUNTING",
                        words.message.format(at=f"{log.rel}:{value.line}", detail=detail),
                        severity=Severity.FAIL, file=log.rel, line=value.line,
                        evidence=f"{value.line}: {value.text}", hint=words.hint, confidence="high")
            return
    for rel in result.run:
        parsed = result.scripts.get(rel)
        named = _named_in_code(parsed, _TRANSFORMED_DATA) if parsed is not None else None
        if named is None:
            continue
        (line, column), text = named
        words = WORDS[TRANSFORMED_CODE]
        shipped = sub.scripts.get(rel)
        yield found("BPB_BYTE_ACCOUNTING", words.message.format(at=f"line {line}", detail=text),
                    severity=Severity.WARN, file=rel, line=line, column=column,
                    evidence=f"{line}: {parsed.excerpt(line, line)}", hint=words.hint,
                    via=shipped.via(line) if shipped is not None else None, confidence="high")
        return


def _transformed_in(parsed):
    """Where a log shows its tokens are CaseOps-transformed text, and what it says: its dataset's
    name, else its validation token count, which is the CaseOps split's whatever the folder is
    called (the transform adds tokens: no other export has that count). None where it shows not."""
    if parsed.dataset is not None and dataset_key(str(parsed.dataset.value)).endswith("_caseops"):
        return parsed.dataset, str(parsed.dataset.value)
    count = parsed.val_tokens.value if parsed.val_tokens is not None else None
    full = FULL_VAL_TOKENS["sp8192_caseops"]
    if count is not None and covers(count, full) and count <= max(full):
        return parsed.val_tokens, f"{int(count):,} validation tokens, the CaseOps sp8192 split"
    return None


def _named_in_code(parsed, pattern):
    """The first string of a script's code (not a docstring or other bare string) that `pattern`
    finds, as ((line, column), the text found); None where none does."""
    if not pattern.search(parsed.source):
        return None  # not in the text at all: no tree walk
    ranges = trees.positions(parsed.module).ranges  # every node, recorded once per module
    bare = {id(part) for n in ranges if isinstance(n, cst.Expr) for part in _strings(n.value)}
    named = [(start, m.group(0)) for n, (start, _) in ranges.items()
             if isinstance(n, (cst.SimpleString, cst.FormattedStringText)) and id(n) not in bare
             for m in [pattern.search(n.value)] if m]
    return min(named) if named else None


def _sidecar_findings(sub):
    """One INFO per script at the first string of its code that names the byte sidecar's files
    (docstrings and other bare strings name nothing)."""
    for rel, parsed in sorted(legality.analyse(sub).scripts.items()):
        named = _named_in_code(parsed, _SIDECAR_NAME)
        if named is None:
            continue
        (line, column), _ = named
        shipped = sub.scripts.get(rel)
        yield found("BPB_BYTE_ACCOUNTING", WORDS[SIDECAR].message.format(at=f"line {line}"),
                    severity=Severity.INFO, file=rel, line=line, column=column,
                    evidence=f"{line}: {parsed.excerpt(line, line)}",
                    via=shipped.via(line) if shipped is not None else None, confidence="high")
