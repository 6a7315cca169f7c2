"""Lay out folders of a commit on disk, read straight from git's object store (no checkout).

The audit reads a folder from disk; a PR's folder is written out from its commit so that the
clone's own work tree is never touched. Writing is bounded: names that could leave the
destination are refused, at most one file more than the audit reads is written, and a file past
FILE_LIMIT keeps its size but not its tail (the audit reads at most 16 MiB of a file and the
smoke import copies none over 64 MiB).
"""

from __future__ import annotations

import io
import os
import select
import subprocess
from pathlib import Path

from audits.submission import MAX_DEPTH, MAX_ENTRIES, InputError
from audits.submission.gitdiff import git

FILE_LIMIT = 64 * 2**20  # bytes written of one file
TOTAL_LIMIT = 1024 * 2**20  # bytes written in all
_CHUNK = 2**20
IDLE_S = 10  # git sends a blob at once; this long without a byte is a stall


def extract(repo: Path, commit: str, folder: str, dest: Path) -> list[str]:
    """Write the tree at `commit:folder` under `dest` (created). Returns the paths (relative to
    `folder`) of the files whose content the clone does not hold (a partial clone), not written."""
    listing = git(repo, "ls-tree", "-r", "-z", "--long", f"{commit}:{folder}")
    entries, files, missing, deep = [], set(), [], set()
    for record in listing.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        mode, kind, oid, size = meta.split()
        parts = path.split("/")
        if kind != "blob" or any(p in ("", ".", "..") for p in parts) or \
                path in files or any("/".join(parts[:i]) in files for i in range(1, len(parts))):
            continue  # submodules, names that would leave the folder, paths through a file or link
        if len(parts) > MAX_DEPTH + 1:  # the loader reads no deeper; its folders show the depth
            deep.add("/".join(parts[:MAX_DEPTH + 1]))
            continue
        files.add(path)
        if not size.isdigit():  # ls-tree cannot size an object the store lacks
            missing.append(path)
            continue
        entries.append((mode, oid, int(size), path))
    dest.mkdir(parents=True, exist_ok=True)
    for folder_path in sorted(deep)[:MAX_ENTRIES + 1]:
        (dest / folder_path).mkdir(parents=True, exist_ok=True)
    entries = entries[:MAX_ENTRIES + 1]  # one past what the loader lists, so it reports the excess
    written = 0
    with _BlobReader(repo) as blobs:
        for mode, oid, size, path in entries:
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            keep = min(size, FILE_LIMIT)
            if written + keep > TOTAL_LIMIT:
                raise InputError(f"{folder} at {commit[:12]} holds over {TOTAL_LIMIT // 2**20} MiB; "
                                 "audit a checkout of it instead")
            written += keep
            if mode == "120000":  # a link: its blob is the target; the loader never follows it
                link = blobs.read(oid, size, 4096)
                if b"\0" not in link:
                    os.symlink(os.fsdecode(link), target)
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o755 if mode == "100755" else 0o644)
            with os.fdopen(fd, "wb") as handle:
                blobs.copy(oid, size, handle, keep)
                handle.truncate(size)  # past FILE_LIMIT: the size stays, the tail is a hole
    return missing


class _BlobReader:
    """One `git cat-file --batch` for every blob of a folder. Every read waits at most IDLE_S for
    git: an object whose header claims more bytes than its body holds leaves git waiting for the
    next request while we wait for the rest of the body."""

    def __init__(self, repo: Path):
        self.proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.pending = b""

    def __enter__(self) -> _BlobReader:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=IDLE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def _read(self, most: int, oid: str) -> bytes:
        """Up to `most` bytes of git's answer, as soon as some come; b"" at its end."""
        if not self.pending:
            ready, _, _ = select.select([self.proc.stdout], [], [], IDLE_S)
            if not ready:
                self.proc.kill()
                raise InputError(f"git cat-file: no answer in {IDLE_S} s for object {oid} "
                                 "(a damaged object?)")
            self.pending = os.read(self.proc.stdout.fileno(), _CHUNK)
        chunk, self.pending = self.pending[:most], self.pending[most:]
        return chunk

    def _open(self, oid: str, size: int) -> None:
        self.proc.stdin.write(oid.encode() + b"\n")
        self.proc.stdin.flush()
        header = b""
        while not header.endswith(b"\n") and len(header) < 200:
            byte = self._read(1, oid)
            if not byte:
                break
            header += byte
        header = header.split()
        if len(header) != 3 or header[1] != b"blob" or header[2] != str(size).encode():
            raise InputError(f"git cat-file: object {oid} is not the blob ls-tree listed")

    def copy(self, oid: str, size: int, out, keep: int) -> None:
        """Write the first `keep` bytes of the blob to `out`, read past the rest."""
        self._open(oid, size)
        left = size + 1  # the blob and its closing newline
        while left:
            chunk = self._read(min(_CHUNK, left), oid)
            if not chunk:
                raise InputError(f"git cat-file: object {oid} ended early")
            if keep > 0:
                out.write(chunk[:keep])
                keep -= min(keep, len(chunk))
            left -= len(chunk)

    def read(self, oid: str, size: int, limit: int) -> bytes:
        """The blob's first `limit` bytes."""
        out = io.BytesIO()
        self.copy(oid, size, out, min(size, limit))
        return out.getvalue()
