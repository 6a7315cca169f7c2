"""Count code bytes the way merged records do: minify, compress, wrap in a self-extracting stub.

The minifier, the wrappers (the records' and the one `pgolf package` ships) and the compact form
live in `trainer.codesize`: the trainer logs the
same count (`Code size (compressed): N bytes`) from inside the single-file bundle, which cannot
import pgolf, and one implementation means the log and the audit never disagree. Reading any
wrapper back is `audits.submission.unwrap`'s job.
"""

from __future__ import annotations

import functools
import posixpath

from audits.submission import ENTRY_SCRIPT, Script, Submission
from audits.submission.imports import imports
from trainer.codesize import (
    WRAPPER_HEAD, WRAPPER_TAIL, MinifyError, compact_form, minify, pack, read_source, shipped_form, wrap,
)

__all__ = ["WRAPPER_HEAD", "WRAPPER_TAIL", "MinifyError", "compact_form", "minify", "pack", "read_source",
           "shipped_form", "wrap", "counted_bytes", "code_that_runs"]


def counted_bytes(raw: bytes, source: str | None) -> int:
    """Code bytes for the cap: the file as shipped or pgolf's compact form, whichever is smaller."""
    if source is None:
        return len(raw)
    return min(len(raw), _compact_bytes(source))


@functools.lru_cache(maxsize=16)  # every seed log of a folder counts the same scripts
def _compact_bytes(source: str) -> int:
    return len(compact_form(source).encode("utf-8"))


def code_that_runs(sub: Submission) -> list[Script]:
    """The shipped scripts the artifact counts: the entry script, the files its wrapper decodes
    and the sibling modules it imports, transitively. A readable copy of a wrapped script, a data
    preparation script or an ablation's script is not run by the submission. Without an entry
    script, every shipped script."""
    if ENTRY_SCRIPT not in sub.scripts:
        return list(sub.scripts.values())
    run, todo = {ENTRY_SCRIPT}, [ENTRY_SCRIPT]
    while todo:
        script = sub.scripts[todo.pop()]
        here = posixpath.dirname(script.rel)
        reached = list(script.wrapper_reads)
        reached += [posixpath.join(here, f"{name}.py") for name, _, _ in imports(script.source or "")]
        for rel in reached:
            if rel in sub.scripts and rel not in run:
                run.add(rel)
                todo.append(rel)
    return [sub.scripts[rel] for rel in sorted(run)]
