"""Where the nodes of a libcst module sit in its source, from one pass of code generation.

libcst's PositionProvider (through MetadataWrapper) takes about a second on a 150 KB module: it
also runs an empty visit over every node. This pass records the same ranges with the same hooks
PositionProvider's codegen state uses (libcst's internal CodegenState) in about a third of that
(a one-off timing on a 150 KB record script); tests/audits/legality/test_parts.py checks the two agree
on every node. Code generation is lossless, so offsets are offsets into the parsed source.
"""

from __future__ import annotations

import contextlib
import dataclasses

import libcst as cst
from libcst._nodes.internal import CodegenState

Point = tuple[int, int]  # (1-based line, 0-based column)


@dataclasses.dataclass
class Positions:
    ranges: dict  # node -> (start, end) Points: its syntactic range where libcst has one, else its extent
    spans: dict  # id(node) -> (start, end) offsets of the code generated for it


def record(module: cst.Module) -> Positions:
    """Every node's range and span. Recurses once per tree level: deep trees need a deep recursion
    limit (callers run it on a large-stack thread)."""
    recorder = _Recorder(default_indent=module.default_indent, default_newline=module.default_newline)
    module._codegen(recorder)
    return Positions(recorder.ranges, recorder.spans)


@dataclasses.dataclass
class _Recorder(CodegenState):
    ranges: dict = dataclasses.field(default_factory=dict)
    spans: dict = dataclasses.field(default_factory=dict)
    line: int = 1
    column: int = 0
    offset: int = 0
    starts: list = dataclasses.field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.offset += len(value)
        newlines = value.count("\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - value.rfind("\n") - 1
        else:
            self.column += len(value)

    def pop_trailing_newline(self) -> None:
        pass  # nothing is kept to pop: only positions are recorded

    def before_codegen(self, node) -> None:
        self.starts.append((self.line, self.column, self.offset))

    def after_codegen(self, node) -> None:
        # nodes without a syntactic position (brackets, whitespace) get their whole extent, as
        # PositionProvider does; some are the start or end of a syntactic range
        line, column, offset = self.starts.pop()
        if node not in self.ranges:
            self.ranges[node] = ((line, column), (self.line, self.column))
        self.spans[id(node)] = (offset, self.offset)

    @contextlib.contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        start = (self.line, self.column)
        yield
        ranges = self.ranges
        ranges[node] = (ranges[start_node][0] if start_node is not None else start,
                        ranges[end_node][1] if end_node is not None else (self.line, self.column))
