"""The folder view every check reads: built once per submission, never touched again.

Loading walks the folder without following links, reads every file it needs with a size bound,
parses the logs and submission.json, and turns unreadable input into findings instead of errors.
Only a path that is missing or not a folder is an error (the caller exits 2).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import posixpath
import re
import stat
from pathlib import Path

from audits.findings import Severity
from audits.submission import logparse, metadata, unwrap
from trainer.codesize import read_source

MAX_ENTRIES = 5000
MAX_DEPTH = 8
LOG_LIMIT = 16 * 1024 * 1024
SCRIPT_LIMIT = 8 * 1024 * 1024
SMALL_LIMIT = 1024 * 1024
ENTRY_SCRIPT = "train_gpt.py"
TRACKS = {"track_10min_16mb": "10min_16mb", "track_non_record_16mb": "non_record_16mb"}
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f\s]")
_NON_RECORD = re.compile(r"non[-_ ]?record", re.I)


class InputError(Exception):
    """The audit cannot start: the message is one line saying what is wrong and what to do."""


@dataclasses.dataclass(frozen=True)
class Entry:
    rel: str
    kind: str  # file, dir, symlink, other
    size: int


@dataclasses.dataclass
class Script:
    """A shipped .py file: its bytes, and its text when it decodes as UTF-8."""

    rel: str
    data: bytes
    text: str | None
    unwrapped: str | None = None  # the payload of a self-extracting wrapper, when it is one
    wrapper_note: str | None = None  # where that payload came from, e.g. "train_gpt.py:2 (raw lzma + base85)"
    wrapper_error: str | None = None  # why a wrapper's payload could not be read
    wrapper_error_line: int | None = None  # line of that wrapper's exec
    wrapper_reads: tuple[str, ...] = ()  # other files of the folder its wrapper decoded

    @property
    def source(self) -> str | None:
        """The code that runs: the unwrapped payload of a wrapper, else the file's text."""
        return self.unwrapped if self.unwrapped is not None else self.text

    def via(self, line: int | None = None) -> str | None:
        """For a finding at `line` of `source`: how that line relates to the shipped file.
        None for a plain script, whose lines are the file's own."""
        if self.wrapper_note is None:
            return None
        return f"line {line} of the source unwrapped from {self.wrapper_note}" if line else \
            f"source unwrapped from {self.wrapper_note}"


@dataclasses.dataclass(frozen=True)
class Problem:
    """What the loader met and did not read as given: the input rules (audits/rules/input.py)
    report it. `fields` are the finding's own (file, evidence, hint); `severity` None is the
    rule's."""

    rule: str
    message: str
    severity: Severity | None
    fields: dict


def _problem(rule: str, message: str, *, severity: Severity | None = None, **fields) -> Problem:
    return Problem(rule, message, severity, fields)


@dataclasses.dataclass
class LogFile:
    rel: str
    sha256: str
    parsed: logparse.ParsedLog
    text: str  # what was read of it (at most LOG_LIMIT bytes)


@dataclasses.dataclass
class Submission:
    root: Path
    name: str
    track: str
    track_origin: str
    entries: list[Entry] = dataclasses.field(default_factory=list)
    readme: str | None = None
    claims: metadata.Claims | None = None
    logs: list[LogFile] = dataclasses.field(default_factory=list)
    scripts: dict[str, Script] = dataclasses.field(default_factory=dict)
    requirements: list[str] | None = None
    launch: dict[str, str] = dataclasses.field(default_factory=dict)  # shell scripts: rel -> text
    changes: list[tuple[str, str]] | None = None  # (status letter, repo path): --base, --changed-files
    repo_rel: str | None = None  # the folder's path inside the repository, when known
    problems: list[Problem] = dataclasses.field(default_factory=list)

    @property
    def record_track(self) -> bool:
        return self.track == "10min_16mb"

    @property
    def entry_script(self) -> Script | None:
        return self.scripts.get(ENTRY_SCRIPT)

    def has_file(self, rel: str) -> bool:
        return any(e.rel == rel and e.kind == "file" for e in self.entries)


def display_name(name: str) -> str:
    """A file name safe to print on one line: control characters escaped."""
    return name if not re.search(r"[\x00-\x1f\x7f]", name) else ascii(name)[1:-1]


def load(path: str | os.PathLike, changes=None, repo_rel=None, placed_at=None) -> Submission:
    """The folder at `path`, read once. `placed_at`: where a staged folder will lie once moved
    into place; its name and track are read from there."""
    root = Path(path)
    if not root.exists() and not root.is_symlink():
        raise InputError(f"{display_name(str(path))}: no such folder; give the path of a records folder")
    if not root.is_dir():
        raise InputError(f"{display_name(str(path))}: not a folder; give the records folder that holds it")
    resolved = root.resolve()
    place = Path(placed_at).resolve() if placed_at is not None else resolved
    track, origin = _track_from_path(place, repo_rel)
    sub = Submission(root=resolved, name=place.name, track=track, track_origin=origin,
                     changes=changes, repo_rel=repo_rel)
    _walk(sub)
    _read_files(sub)
    if sub.claims is not None and origin.startswith("assumed"):
        _track_from_claims(sub)
    if sub.track_origin.startswith("assumed"):
        _track_from_declaration(sub)
    return sub


def place(sub: Submission, repo_rel: str) -> None:
    """Give a loaded folder its place in the repository (found in a changed-paths list): its
    repository path, the name it has there, and the track that place gives."""
    sub.repo_rel, sub.name = repo_rel, repo_rel.rsplit("/", 1)[-1]
    track, origin = _track_from_path(sub.root, repo_rel)
    if not origin.startswith("assumed"):
        sub.track, sub.track_origin = track, origin


def _track_from_path(root: Path, repo_rel: str | None) -> tuple[str, str]:
    parent = Path(repo_rel).parent.name if repo_rel else root.parent.name
    if parent in TRACKS:
        return TRACKS[parent], f"from the folder's place under {parent}/"
    return "10min_16mb", "assumed: record track (not under a track_* folder, no 'track' in submission.json)"


def _track_from_claims(sub: Submission) -> None:
    track = (sub.claims.track or "").lower().replace("-", "_")
    if not track:
        return
    if "non_record" in track:
        sub.track = "non_record_16mb"
    elif "10min" in track:
        sub.track = "10min_16mb"
    else:
        return
    sub.track_origin = f"from submission.json 'track': {sub.claims.track!r}"


def _track_from_declaration(sub: Submission) -> None:
    """Out of its place and with no 'track' field, a folder can still say it is a non-record
    submission: in submission.json's name or a key of its own (`non_record_reason`), or in the
    README's title. Other mentions (a status line, a comparison) do not count."""
    data = sub.claims.data if sub.claims is not None else None
    if isinstance(data, dict):
        key = next((k for k in data if _NON_RECORD.search(str(k))), None)
        if key is not None:
            sub.track, sub.track_origin = "non_record_16mb", f"from submission.json's key {key!r}"
            return
        if isinstance(data.get("name"), str) and _NON_RECORD.search(data["name"]):
            sub.track, sub.track_origin = "non_record_16mb", f"from submission.json's name {data['name']!r}"
            return
    title = next((line for line in (sub.readme or "").splitlines() if line.startswith("# ")), "")
    if _NON_RECORD.search(title):
        sub.track, sub.track_origin = "non_record_16mb", f"from the README's title {title[2:80]!r}"


def _walk(sub: Submission) -> None:
    stack = [(sub.root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            sub.problems.append(_problem("FILE_UNREADABLE", f"cannot list {prefix or '.'}: {exc.strerror}",
                                      file=prefix or "."))
            continue
        for item in items:
            rel = prefix + item.name
            if len(sub.entries) >= MAX_ENTRIES:
                sub.problems.append(_problem(
                    "FILE_UNREADABLE", f"more than {MAX_ENTRIES} files; the rest were not read",
                    hint="A records folder needs a handful of files: remove data, checkpoints and caches."))
                return
            if _BAD_NAME.search(item.name):
                sub.problems.append(_problem(
                    "BAD_FILENAME", f"file name {display_name(item.name)!r} contains whitespace or "
                    "control characters", file=display_name(rel),
                    hint="Rename it with letters, digits, '.', '_' and '-' only."))
            kind, size = _classify(item)
            sub.entries.append(Entry(rel, kind, size))
            if kind == "symlink":
                _check_link(sub, item, rel)
            elif kind == "dir":
                if depth + 1 >= MAX_DEPTH:
                    sub.problems.append(_problem("FILE_UNREADABLE", f"{display_name(rel)}/ is nested "
                                              f"deeper than {MAX_DEPTH} levels; not read",
                                              file=display_name(rel)))
                else:
                    stack.append((Path(item.path), rel + "/", depth + 1))


def _classify(item: os.DirEntry) -> tuple[str, int]:
    try:
        st = item.stat(follow_symlinks=False)
    except OSError:
        return "other", 0
    if stat.S_ISLNK(st.st_mode):
        return "symlink", 0
    if stat.S_ISDIR(st.st_mode):
        return "dir", 0
    if stat.S_ISREG(st.st_mode):
        return "file", st.st_size
    return "other", 0


def _check_link(sub: Submission, item: os.DirEntry, rel: str) -> None:
    target = os.readlink(item.path)
    try:
        resolved = (Path(item.path).parent / target).resolve()
    except RuntimeError:  # the link leads back to itself
        sub.problems.append(_problem("SYMLINK_OUTSIDE", f"{display_name(rel)} is a symbolic link that "
                                  f"loops (to {display_name(target)}); pgolf does not follow links",
                                  file=display_name(rel), hint="Delete the link."))
        return
    inside = resolved == sub.root or sub.root in resolved.parents
    if inside:
        sub.problems.append(_problem("SYMLINK_OUTSIDE", f"{display_name(rel)} is a symbolic link "
                                  f"(to {display_name(target)}); pgolf does not follow links",
                                  severity=Severity.INFO, file=display_name(rel)))
    else:
        sub.problems.append(_problem(
            "SYMLINK_OUTSIDE", f"{display_name(rel)} links outside the folder, to {display_name(target)}",
            file=display_name(rel), evidence=f"{display_name(rel)} -> {display_name(target)}",
            hint="Copy the file into the folder (if it is needed) and delete the link."))


def read_bounded(path: Path, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of a file, and whether it was longer."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    return data[:limit], len(data) > limit


def decode_text(sub: Submission, rel: str, data: bytes, truncated: bool, limit: int,
                what: str) -> str | None:
    """Text of a file, or None with a finding when it is binary; notes truncation and bad bytes."""
    if b"\x00" in data[:8192]:
        sub.problems.append(_problem("FILE_UNREADABLE", f"{display_name(rel)} is binary, not a {what}",
                                  file=display_name(rel),
                                  hint=f"Replace it with the real {what}, or remove it."))
        return None
    if truncated:
        sub.problems.append(_problem("FILE_UNREADABLE", f"{display_name(rel)} is over {limit // 2**20} "
                                  f"MiB; only the first {limit // 2**20} MiB were read",
                                  file=display_name(rel)))
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd")
    if bad > 0:
        sub.problems.append(_problem("FILE_UNREADABLE", f"{display_name(rel)} has {bad} bytes that "
                                  "are not UTF-8; they were read as U+FFFD",
                                  severity=Severity.INFO, file=display_name(rel)))
    return text


def _read_files(sub: Submission) -> None:
    for entry in sub.entries:
        if entry.kind != "file":
            continue
        path = sub.root / entry.rel
        lower = entry.rel.lower()
        try:
            if entry.rel == "submission.json":
                _read_claims(sub, path, entry.rel)
            elif entry.rel == "README.md":
                data, cut = read_bounded(path, SMALL_LIMIT)
                sub.readme = decode_text(sub, entry.rel, data, cut, SMALL_LIMIT, "README")
            elif entry.rel == "requirements.txt":
                data, cut = read_bounded(path, SMALL_LIMIT)
                text = decode_text(sub, entry.rel, data, cut, SMALL_LIMIT, "requirements file")
                sub.requirements = parse_requirements(text or "")
            elif lower.endswith(".py"):
                _read_script(sub, path, entry.rel)
            elif lower.endswith(".sh"):
                data, cut = read_bounded(path, SMALL_LIMIT)
                text = decode_text(sub, entry.rel, data, cut, SMALL_LIMIT, "shell script")
                if text is not None:
                    sub.launch[entry.rel] = text
            elif lower.endswith((".log", ".txt")) and not Path(lower).name.startswith(("requirements", "readme")):
                _read_log(sub, path, entry.rel)
        except OSError as exc:
            sub.problems.append(_problem("FILE_UNREADABLE", f"cannot read {display_name(entry.rel)}: "
                                      f"{exc.strerror}", file=display_name(entry.rel)))


def _read_claims(sub: Submission, path: Path, rel: str) -> None:
    data, cut = read_bounded(path, SMALL_LIMIT)
    if cut:
        sub.claims = metadata.Claims(problems=[f"over {SMALL_LIMIT // 2**20} MiB; not read"])
        return
    text = decode_text(sub, rel, data, False, SMALL_LIMIT, "JSON file")
    sub.claims = metadata.read_claims(text) if text is not None else metadata.Claims(
        problems=["binary content, not JSON"])


def _read_script(sub: Submission, path: Path, rel: str) -> None:
    data, cut = read_bounded(path, SCRIPT_LIMIT)
    if cut:
        sub.problems.append(_problem("FILE_UNREADABLE", f"{display_name(rel)} is over "
                                  f"{SCRIPT_LIMIT // 2**20} MiB; not analysed", file=display_name(rel),
                                  hint="A training script is a few hundred KB at most."))
        sub.scripts[rel] = Script(rel, b"", None)
        return
    try:
        text = read_source(data)  # as Python reads it: UTF-8 unless it declares an encoding (PEP 263)
    except (UnicodeDecodeError, SyntaxError) as exc:  # bytes not in its encoding, or a bad declaration
        why = (f"is not valid {exc.encoding} (byte {exc.start})" if isinstance(exc, UnicodeDecodeError)
               else f"cannot be read: {exc.msg}")
        sub.problems.append(_problem("FILE_UNREADABLE", f"{display_name(rel)} {why}; Python will refuse "
                                  "to run it", file=display_name(rel), hint="Save the script as UTF-8."))
        text = None
    script = Script(rel, data, text)
    if text is not None:
        result = unwrap.unwrap(text, rel, _sibling_reader(sub, rel))
        if result is not None and result.source is not None:
            script.unwrapped, script.wrapper_note = result.source, result.note
            script.wrapper_reads = tuple(layer.file for layer in result.layers if layer.file not in ("", rel))
        elif result is not None:
            script.wrapper_error, script.wrapper_error_line = result.error, result.error_line
    sub.scripts[rel] = script


def _sibling_reader(sub: Submission, rel: str) -> unwrap.ReadSibling:
    """How a wrapper reads another file: only a regular file listed in the folder, bounded."""

    def read(name: str) -> bytes:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(rel), name))
        if name.startswith("/") or path == ".." or path.startswith("../"):
            raise unwrap.Unreadable(f"the wrapper reads {display_name(name)}, outside the folder; "
                                    "pgolf reads only files inside it")
        if not sub.has_file(path):
            raise unwrap.Unreadable(f"the wrapper reads {display_name(path)}, which is not a regular "
                                    "file in the folder")
        try:
            data, cut = read_bounded(sub.root / path, SCRIPT_LIMIT)
        except OSError as exc:
            raise unwrap.Unreadable(f"cannot read {display_name(path)}: {exc.strerror}") from None
        if cut:
            raise unwrap.Unreadable(f"{display_name(path)} is over {SCRIPT_LIMIT // 2**20} MiB")
        return data

    return read


def _read_log(sub: Submission, path: Path, rel: str) -> None:
    data, cut = read_bounded(path, LOG_LIMIT)
    text = decode_text(sub, rel, data, cut, LOG_LIMIT, "train log")
    if text is None:
        return
    parsed = logparse.parse_log(text, display_name(rel))
    if parsed.looks_like_log:
        sub.logs.append(LogFile(display_name(rel), hashlib.sha256(data).hexdigest(), parsed, text))


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def parse_requirements(text: str) -> list[str]:
    """Distribution names listed in a requirements file (comments and options skipped)."""
    names = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        m = _REQ_NAME.match(line)
        if m:
            names.append(m.group(1))
    return names
