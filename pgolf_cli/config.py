"""`[tool.pgolf]` in pyproject.toml: a project's audit settings.

    [tool.pgolf]
    python = "3.10"                 # target Python of the syntax gate
    baseline-bpb = [1.0810, 1.0812] # the record to beat, per seed (or one number)
    [tool.pgolf.waivers]
    FEWER_THAN_3_SEEDS = "seed 999 crashed twice; rerun pending"

The nearest pyproject.toml that has the table, from the audited folder's parent upward to the
root of the git checkout holding it: the audited change never configures its own audit, so a
pyproject.toml inside the folder, or one the change adds or modifies (`--changed-files`), is not
read; with `--base` the table comes from the base commit's tree. Options given on the command line
win.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from audits.submission import InputError
from audits.submission.gitdiff import git
from pgolf_cli.errors import PgolfError

MAX_PYPROJECT = 1024 * 1024
KEYS = ("python", "baseline-bpb", "waivers")


@dataclasses.dataclass(frozen=True)
class Config:
    path: str | None = None  # where the table was read: a file, or REF:PATH in a commit
    python: str | None = None
    baseline_bpb: tuple[float, ...] = ()
    waivers: dict[str, str] = dataclasses.field(default_factory=dict)


def _read(pyproject: Path) -> bytes:
    try:
        with pyproject.open("rb") as handle:
            return handle.read(MAX_PYPROJECT + 1)
    except OSError as exc:
        raise PgolfError(f"{pyproject}: cannot read it ({exc.strerror})") from None


def _table(data: bytes, where: str) -> dict | None:
    if len(data) > MAX_PYPROJECT:
        raise PgolfError(f"{where}: over 1 MiB; not read as a configuration")
    try:
        tool = tomllib.loads(data.decode("utf-8", "replace")).get("tool", {})
    except tomllib.TOMLDecodeError as exc:
        raise PgolfError(f"{where}: not valid TOML ({exc})") from None
    except RecursionError:
        raise PgolfError(f"{where}: nested too deep to read as a configuration") from None
    table = tool.get("pgolf") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise PgolfError(f"{where}: [tool.pgolf] must be a table")
    return table


def find(folder: Path, changes: tuple[tuple[str, str], ...] = ()) -> Config:
    """The configuration for an audit of `folder`, or an empty one. `changes` (status, repository
    path): the change under audit, whose files are not configuration."""
    folder = folder.resolve()
    touched = {path for status, path in changes if status != "D"}
    for parent in folder.parents:
        pyproject = parent / "pyproject.toml"
        if pyproject.is_file() and not _in_change(pyproject, touched):
            table = _table(_read(pyproject), str(pyproject))
            if table is not None:
                return _config(str(pyproject), table)
        if (parent / ".git").exists():  # the checkout's root: the project ends here
            break
    return Config()


def _in_change(path: Path, touched: set[str]) -> bool:
    """Is `path` one of the change's paths? Matched by its tail, since where the repository's root
    lies is not known without a checkout: a false match only drops a configuration."""
    return any(str(path).endswith("/" + rel) for rel in touched)


def at_commit(repo: Path, ref: str) -> Config:
    """The configuration for an audit of the change in checkout `repo`, as the tree of `ref` (the
    base commit) holds it: the nearest pyproject.toml with the table from `repo` up to its root."""
    try:
        top = Path(git(repo, "rev-parse", "--show-toplevel").decode("utf-8", "surrogateescape").strip())
        rel = repo.resolve().relative_to(top.resolve())
        for folder in (rel, *rel.parents):
            path = "pyproject.toml" if str(folder) == "." else f"{folder.as_posix()}/pyproject.toml"
            listed = git(repo, "ls-tree", "--full-tree", "-l", "-z", ref, "--", path)
            listed = listed.split(b"\t", 1)[0].split()  # mode, type, id, size
            if len(listed) < 4 or listed[1] != b"blob":
                continue
            where = f"{ref}:{path}"
            if int(listed[3]) > MAX_PYPROJECT:
                raise PgolfError(f"{where}: over 1 MiB; not read as a configuration")
            table = _table(git(repo, "cat-file", "blob", listed[2].decode()), where)
            if table is not None:
                return _config(where, table)
    except (InputError, ValueError) as exc:
        raise PgolfError(f"configuration at {ref}: {exc}") from None
    return Config()


def _config(path: str, table: dict) -> Config:
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
