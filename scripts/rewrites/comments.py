"""Comments and docstrings: all stripped, or misleading ones added (the audit reads code, not
what its author says about it)."""

from __future__ import annotations

import libcst as cst

from rewrites import source

CLAIM = "score-first, legal: every token is scored before any update that could see it"


def strip(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return source.changed(files, {rel: m.visit(_Strip()).code for rel, m in source.modules(files).items()})


def mislead(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return source.changed(files, {rel: m.visit(_Mislead()).code for rel, m in source.modules(files).items()})


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
        isinstance(stmt.body[0], cst.Expr) and \
        isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


class _Strip(cst.CSTTransformer):
    def leave_EmptyLine(self, original, updated):
        return updated.with_changes(comment=None) if updated.comment is not None else updated

    def leave_TrailingWhitespace(self, original, updated):
        return updated.with_changes(comment=None, whitespace=cst.SimpleWhitespace(""))

    def leave_ParenthesizedWhitespace(self, original, updated):
        return updated  # comments inside brackets stay: their lines hold code

    def leave_Module(self, original, updated):
        return updated.with_changes(header=[], body=_without_docstring(updated.body, module=True))

    def leave_FunctionDef(self, original, updated):
        return updated.with_changes(body=updated.body.with_changes(body=_without_docstring(updated.body.body)))

    def leave_ClassDef(self, original, updated):
        return updated.with_changes(body=updated.body.with_changes(body=_without_docstring(updated.body.body)))


def _without_docstring(body, module: bool = False):
    if not body or not _is_docstring(body[0]) or not isinstance(body, (list, tuple)):
        return body
    rest = list(body[1:])
    if rest or module:
        return rest
    return [cst.SimpleStatementLine([cst.Pass()])]


class _Mislead(cst.CSTTransformer):
    """A claim of legality as a docstring of every function and a comment above every loop."""

    def leave_FunctionDef(self, original, updated):
        if not isinstance(updated.body, cst.IndentedBlock):
            return updated
        doc = cst.SimpleStatementLine([cst.Expr(cst.SimpleString(f'"""{CLAIM.capitalize()}."""'))])
        return updated.with_changes(body=updated.body.with_changes(body=[doc, *updated.body.body]))

    def leave_For(self, original, updated):
        return _claimed(updated)

    def leave_While(self, original, updated):
        return _claimed(updated)


def _claimed(node):
    line = cst.EmptyLine(comment=cst.Comment(f"# {CLAIM}"))
    return node.with_changes(leading_lines=[*node.leading_lines, line])
