"""One parsed script: the libcst module and line numbers of its nodes, on demand.

Line numbers are libcst's own positions (the ranges PositionProvider gives), recorded by one
code-generation pass with the same hooks PositionProvider's codegen state uses (libcst's internal
CodegenState; tests/audits/legality/test_parts.py checks the two agree on every node). Through
MetadataWrapper, PositionProvider takes about a second on a 150 KB module (it also runs an empty
batched visit over every node); this pass takes about a third of that, and only when a finding
needs a line.
"""

from __future__ import annotations

import contextlib
import dataclasses

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange


@dataclasses.dataclass
class _Recorder(CodegenState):
    """Code generation that keeps, for every node with a syntactic position, its (start, end)."""

    ranges: dict = dataclasses.field(default_factory=dict)
    line: int = 1
    column: int = 0
    starts: list = dataclasses.field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        newlines = value.count("\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - value.rfind("\n") - 1
        else:
            self.column += len(value)

    def before_codegen(self, node) -> None:
        self.starts.append((self.line, self.column))

    def after_codegen(self, node) -> None:
        # nodes without a syntactic position (brackets, whitespace) get their whole extent,
        # as PositionProvider does; some are the start or end of a syntactic range
        start = self.starts.pop()
        if node not in self.ranges:
            self.ranges[node] = (start, (self.line, self.column))

    @contextlib.contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        start = (self.line, self.column)
        yield
        ranges = self.ranges
        ranges[node] = (ranges[start_node][0] if start_node is not None else start,
                        ranges[end_node][1] if end_node is not None else (self.line, self.column))


@dataclasses.dataclass
class ParsedScript:
    rel: str
    source: str
    module: cst.Module
    _ranges: dict | None = None

    def position(self, node: cst.CSTNode) -> CodeRange | None:
        """Where `node` is in the source: 1-based lines, 0-based columns."""
        if self._ranges is None:
            recorder = _Recorder(default_indent=self.module.default_indent,
                                 default_newline=self.module.default_newline)
            self.module._codegen(recorder)
            self._ranges = recorder.ranges
        found = self._ranges.get(node)
        return CodeRange(*found) if found is not None else None

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
