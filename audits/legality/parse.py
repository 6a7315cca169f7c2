"""One parsed script: the libcst module and line numbers of its nodes, on demand (the positions
are recorded once per source and shared with the Python-version gate: audits/submission/trees.py)."""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.metadata import CodeRange

from audits.submission import trees


@dataclasses.dataclass
class ParsedScript:
    rel: str
    source: str
    module: cst.Module

    def position(self, node: cst.CSTNode) -> CodeRange | None:
        """Where `node` is in the source: 1-based lines, 0-based columns."""
        found = trees.positions(self.module).ranges.get(node)
        return CodeRange(*found) if found is not None else None

    def excerpt(self, start: int, end: int, limit: int = 3) -> str:
        """Source lines `start`..`end` (at most `limit`, then an ellipsis), dedented together."""
        lines = self.source.splitlines()[start - 1:end]
        cut = len(lines) > limit
        lines = lines[:limit]
        indent = min((len(s) - len(s.lstrip()) for s in lines if s.strip()), default=0)
        text = "\n".join(s[indent:].rstrip() for s in lines)
        return text + ("\n..." if cut else "")


def parse(rel: str, source: str) -> ParsedScript | str:
    """The parsed script, or why it was not parsed (a syntax error, which the syntax checks
    report, or a source too large or too deep for the parser)."""
    try:
        module = trees.cst_module(source)
    except trees.TooComplex as exc:
        return f"too complex to analyse: {exc}"
    except (cst.ParserSyntaxError, SyntaxError, RecursionError, ValueError, MemoryError):
        return "it does not parse"
    return ParsedScript(rel, source, module)
