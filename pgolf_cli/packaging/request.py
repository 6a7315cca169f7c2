"""What a packaging run was asked to do, checked before anything is read or written."""

from __future__ import annotations

import dataclasses
import datetime
import re
from pathlib import Path

from pgolf_cli.package_options import AUTO, CODE_FORMS, TRACK_DIRS
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class PackageError(Exception):
    """Packaging refused: one line saying what is wrong and what to do. Nothing was written."""


@dataclasses.dataclass(frozen=True)
class PackageRequest:
    runs: tuple[Path, ...]
    name: str
    author: str
    github_id: str
    track: str = AUTO
    out: Path = Path("records")
    code_form: str = "wrapped"
    baseline_bpb: tuple[float, ...] | None = None
    slug: str | None = None  # default: derived from `name`
    force: bool = False
    date: datetime.date | None = None  # default: today (UTC)

    @property
    def folder_slug(self) -> str:
        return self.slug if self.slug is not None else slug_of(self.name)

    @property
    def folder_date(self) -> datetime.date:
        return self.date or datetime.datetime.now(datetime.timezone.utc).date()

    @property
    def target(self) -> Path:
        """records/<track dir>/YYYY-MM-DD_<slug>"""
        return self.out / TRACK_DIRS[self.track] / f"{self.folder_date.isoformat()}_{self.folder_slug}"


def slug_of(name: str) -> str:
    """A folder-safe form of a submission's name: `SP8192 3-layer recurrence` -> `SP8192_3-layer_recurrence`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:100]


def validate(request: PackageRequest) -> None:
    """Raise PackageError for a request that cannot produce a valid folder."""
    for flag, value in (("--name", request.name), ("--author", request.author),
                        ("--github-id", request.github_id)):
        if not value.strip():
            raise PackageError(f"{flag} is empty; give it a value")
        if _CONTROL.search(value):
            raise PackageError(f"{flag} {ascii(value)} contains a newline or control character; "
                               "give it on one line")
    if re.search(r"\s|/", request.github_id.strip()):
        raise PackageError(f"--github-id {request.github_id!r} is not a GitHub user name (no spaces "
                           "or slashes)")
    if request.track not in (AUTO, *TRACK_DIRS):
        raise PackageError(f"--track {request.track!r} is not one of {AUTO}, {', '.join(TRACK_DIRS)}")
    if request.code_form not in CODE_FORMS:
        raise PackageError(f"--code-form {request.code_form!r} is not one of {', '.join(CODE_FORMS)}")
    slug = request.folder_slug
    if request.slug is not None and (re.search(r"[\s/\\]", slug) or not _SLUG.match(slug)):
        raise PackageError(f"--slug {ascii(slug)[1:-1]!r} is not a folder name: use letters, digits, "
                           "'.', '_' and '-' only (no spaces or slashes), e.g. "
                           f"--slug {slug_of(slug) or 'MyRun'}")
    if not _SLUG.match(slug):
        raise PackageError(f"--name {request.name!r} gives no usable folder name; add --slug, e.g. "
                           "--slug SP8192_LegalTTT")
    if request.baseline_bpb is not None and (
            not request.baseline_bpb or not all(0 < v < 20 for v in request.baseline_bpb)):
        raise PackageError("--baseline-bpb takes val_bpb values such as 1.0810 (comma-separated for "
                           "per-seed values)")
