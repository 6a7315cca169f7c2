"""`[tool.pgolf]` in pyproject.toml: a project's audit settings.

    [tool.pgolf]
    python = "3.10"                 # target Python of the syntax gate
    baseline-bpb = [1.0810, 1.0812] # the record to beat, per seed (or one number)
    [tool.pgolf.waivers]
    FEWER_THAN_3_SEEDS = "seed 999 crashed twice; rerun pending"

The nearest pyproject.toml that has the table, from the audited folder upward to the root of the
git checkout holding it. Options given on the command line win.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from pgolf_cli.errors import PgolfError

MAX_PYPROJECT = 1024 * 1024
KEYS = ("python", "baseline-bpb", "waivers")


@dataclasses.dataclass(frozen=True)
class Config:
    path: Path | None = None
    python: str | None = None
    baseline_bpb: tuple[float, ...] = ()
    waivers: dict[str, str] = dataclasses.field(default_factory=dict)


def _table(pyproject: Path) -> dict | None:
    try:
        with pyproject.open("rb") as handle:
            data = handle.read(MAX_PYPROJECT + 1)
    except OSError as exc:
        raise PgolfError(f"{pyproject}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_PYPROJECT:
        raise PgolfError(f"{pyproject}: over 1 MiB; not read as a configuration")
    try:
        table = tomllib.loads(data.decode("utf-8", "replace")).get("tool", {}).get("pgolf")
    except tomllib.TOMLDecodeError as exc:
        raise PgolfError(f"{pyproject}: not valid TOML ({exc})") from None
    if table is not None and not isinstance(table, dict):
        raise PgolfError(f"{pyproject}: [tool.pgolf] must be a table")
    return table


def find(start: Path) -> Config:
    """The configuration for an audit of `start` (a folder), or an empty one."""
    folder = start.resolve()
    for parent in (folder, *folder.parents):
        pyproject = parent / "pyproject.toml"
        if pyproject.is_file():
            table = _table(pyproject)
            if table is not None:
                return _config(pyproject, table)
        if (parent / ".git").exists():  # the checkout's root: the project ends here
            break
    return Config()


def _config(path: Path, table: dict) -> Config:
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise PgolfError(f"{path}: [tool.pgolf] has unknown key {unknown[0]!r}; "
                         f"known: {', '.join(KEYS)}")
    python = table.get("python")
    if python is not None and not isinstance(python, str):
        raise PgolfError(f"{path}: [tool.pgolf] python must be a string such as \"3.10\"")
    bpb = table.get("baseline-bpb", [])
    bpb = [bpb] if isinstance(bpb, (int, float)) else bpb
    if not isinstance(bpb, list) or not all(isinstance(v, (int, float)) and 0 < v < 20 for v in bpb):
        raise PgolfError(f"{path}: [tool.pgolf] baseline-bpb must be a val_bpb or a list of them")
    waivers = table.get("waivers", {})
    if not isinstance(waivers, dict) or not all(isinstance(v, str) for v in waivers.values()):
        raise PgolfError(f"{path}: [tool.pgolf.waivers] must map rule IDs to reasons (strings)")
    return Config(path, python, tuple(float(v) for v in bpb), dict(waivers))
