"""One parsed script: the libcst module and line numbers of its nodes, on demand.

Line numbers are libcst's own syntactic positions (the ranges PositionProvider gives), but
recorded by one plain code-generation pass: PositionProvider through MetadataWrapper takes about
a second on a 150 KB module (it also runs an empty batched visit over every node), this pass a
fifth of that. It hooks the same `record_syntactic_position` calls that PositionProvider's own
codegen state uses (libcst's internal CodegenState; tests/test_legality_parts.py checks the two
agree). Nodes that have no syntactic position of their own (brackets, whitespace) fall back to
PositionProvider on their top-level statement.
"""

from __future__ import annotations

import contextlib
import dataclasses

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider


@dataclasses.dataclass
class _Recorder(CodegenState):
    """Code generation that keeps, for every node with a syntactic position, its (start, end)."""

    ranges: dict = dataclasses.field(default_factory=dict)
    line: int = 1
    column: int = 0

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
    _fallback: dict = dataclasses.field(default_factory=dict)  # per top-level statement
    _starts: list[int] = dataclasses.field(default_factory=list)

    def position(self, top: int, node: cst.CSTNode) -> CodeRange | None:
        """Where `node` (inside top-level statement number `top`) is in the source: 1-based
        lines, 0-based columns."""
        if self._ranges is None:
            recorder = _Recorder(default_indent=self.module.default_indent,
                                 default_newline=self.module.default_newline)
            self.module._codegen(recorder)
            self._ranges = recorder.ranges
        found = self._ranges.get(node)
        if found is not None:
            return CodeRange(*found)
        return self._fallback_position(top, node)

    def _fallback_position(self, top: int, node: cst.CSTNode) -> CodeRange | None:
        if not self._starts:  # first line of each top-level statement, its leading lines included
            line = 1 + len(self.module.header)
            for stmt in self.module.body:
                self._starts.append(line)
                line += self.module.code_for_node(stmt).count("\n")
        if top not in self._fallback:
            small = cst.Module(body=[self.module.body[top]], header=[],
                               default_newline=self.module.default_newline,
                               default_indent=self.module.default_indent)
            self._fallback[top] = MetadataWrapper(small, unsafe_skip_copy=True).resolve(PositionProvider)
        ranges, shift = self._fallback[top], self._starts[top] - 1
        local = ranges.get(node)
        if local is None:
            return None
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
