"""One parsed script: the libcst module, its import aliases, and line numbers on demand.

Positions come from libcst's PositionProvider, resolved per top-level statement and only for the
statements a finding points into: resolving every node of a 150 KB module costs about half a
second, and an audit reports on a handful of lines.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider


@dataclasses.dataclass
class ParsedScript:
    rel: str
    source: str
    module: cst.Module
    _starts: list[int] = dataclasses.field(default_factory=list)  # first line of each top-level statement
    _positions: dict[int, dict] = dataclasses.field(default_factory=dict)

    def _start(self, top: int) -> int:
        """First line of top-level statement `top` (with its leading comments and blank lines)."""
        if not self._starts:
            line = 1 + len(self.module.header)
            for stmt in self.module.body:
                self._starts.append(line)
                line += self.module.code_for_node(stmt).count("\n")
        return self._starts[top]

    def position(self, top: int, node: cst.CSTNode) -> CodeRange | None:
        """Where `node`, inside top-level statement number `top`, sits in the source (1-based
        lines, 0-based columns)."""
        if top not in self._positions:
            stmt = self.module.body[top]
            small = cst.Module(body=[stmt], header=[], default_newline=self.module.default_newline,
                               default_indent=self.module.default_indent)
            self._positions[top] = MetadataWrapper(small, unsafe_skip_copy=True).resolve(PositionProvider)
        local = self._positions[top].get(node)
        if local is None:
            return None
        shift = self._start(top) - 1
        return CodeRange((local.start.line + shift, local.start.column),
                         (local.end.line + shift, local.end.column))

    def excerpt(self, start: int, end: int, limit: int = 3) -> str:
        """Source lines `start`..`end` (at most `limit`, then an ellipsis), dedented together."""
        lines = self.source.splitlines()[start - 1:end]
        cut = len(lines) > limit
        lines = lines[:limit]
        indent = min((len(s) - len(s.lstrip()) for s in lines if s.strip()), default=0)
        text = "\n".join(s[indent:].rstrip() for s in lines)
        return text + ("\n..." if cut else "")


def parse(rel: str, source: str) -> ParsedScript | None:
    """The parsed script, or None when libcst cannot parse it (the syntax checks report that)."""
    try:
        module = cst.parse_module(source)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    return ParsedScript(rel, source, module)
