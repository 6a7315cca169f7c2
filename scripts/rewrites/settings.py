"""A setting's default flipped off while the run's command turns it on: every
`os.environ.get("NAME", "1")` (or `os.getenv`, or a default of 1 or True) gets "0" as its
default, and the README gains the command that ran, with `NAME=1` for each. The runs are the same;
only where the setting's value is written changes."""

from __future__ import annotations

import posixpath

import libcst as cst

from audits.submission import codesize
from rewrites import source

_ON = {"1", "true", "True", "TRUE", "yes"}


def flip_defaults(files: dict[str, bytes]) -> dict[str, bytes] | None:
    readme = next((rel for rel in sorted(files) if posixpath.basename(rel).lower() == "readme.md"), None)
    mods = source.modules(files)
    if readme is None or not mods:
        return None
    flipped: dict[str, str] = {}
    new = {}
    for rel, m in mods.items():
        out = m.visit(_Flip(flipped))
        if not out.deep_equals(m):
            new[rel] = out.code
    if not flipped:
        return None
    entry = "train_gpt.py" if "train_gpt.py" in mods else max(mods, key=lambda rel: len(files[rel]))
    assignments = " ".join(f"{name}={value}" for name, value in sorted(flipped.items()))
    text = codesize.read_source(files[readme]) if readme.endswith(".py") else files[readme].decode("utf-8", "replace")
    new[readme] = (text.rstrip("\n") + "\n\nThe runs were launched with:\n\n```bash\n"
                   f"{assignments} torchrun --standalone --nproc_per_node=8 {entry}\n```\n")
    return source.changed(files, new)


def _is_environ_read(func: cst.BaseExpression) -> bool:
    if isinstance(func, cst.Attribute) and func.attr.value == "getenv":
        return True
    return isinstance(func, cst.Attribute) and func.attr.value == "get" and \
        isinstance(func.value, cst.Attribute) and func.value.attr.value == "environ"


class _Flip(cst.CSTTransformer):
    def __init__(self, flipped: dict[str, str]):
        self.flipped = flipped

    def leave_Call(self, original, updated):
        if not _is_environ_read(updated.func) or len(updated.args) != 2:
            return updated
        name, default = updated.args[0].value, updated.args[1].value
        if not isinstance(name, cst.SimpleString) or not isinstance(name.evaluated_value, str):
            return updated
        if isinstance(default, cst.SimpleString) and default.evaluated_value in _ON:
            off = cst.SimpleString(default.prefix + default.quote + "0" + default.quote)
            value = default.evaluated_value
        elif isinstance(default, cst.Integer) and default.value == "1":
            off, value = cst.Integer("0"), "1"
        elif isinstance(default, cst.Name) and default.value == "True":
            off, value = cst.Name("False"), "1"
        else:
            return updated
        setting = name.evaluated_value
        if self.flipped.get(setting, value) != value:
            return updated  # read with two defaults: left alone
        self.flipped[setting] = value
        return updated.with_changes(args=[updated.args[0], updated.args[1].with_changes(value=off)])
