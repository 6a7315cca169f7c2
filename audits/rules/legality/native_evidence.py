"""The legality rules' findings in loops the interpreter does not read: native code the run
loads and Python loops over gathered arrays (audits/legality/native.py), placed and quoted."""

from __future__ import annotations

from audits import legality
from audits.legality import native
from audits.registry import WORDS, found


def native_findings(sub, rule: str, reading: str, kind: str):
    """The rule's findings in loops the interpreter does not read (native code, gathered arrays)."""
    run = legality.analyse(sub).run
    for hit in native.hits(sub, run):
        if hit.kind != reading:
            continue
        words = WORDS[rule][kind]
        shipped = sub.scripts.get(hit.file)
        yield found(rule, words.message.format(at=f"line {hit.line}", other=f"line {hit.token_line}",
                                               language=hit.language),
                    file=hit.file, line=hit.line, evidence=f"{hit.line}: {hit.text}", hint=words.hint,
                    via=shipped.via(hit.line) if shipped is not None else None)
