"""Previous versions of a scope's MEMORY.md, kept in `memory/<scope>/archive/`.

Every accepted rewrite (consolidation, a restore) first copies the file it replaces to
`archive/MEMORY.<UTC timestamp>.md`; `restore_version` puts one back, archiving the
current file first, so nothing a rewrite replaced is ever gone until `keep` newer
versions have piled up. Every write of MEMORY.md here holds the file's own lock, the one
the memory tool's appends take, so an append is never lost between a read and a write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from mnemobot.base.atomic_file import read_text_lenient, write_atomic
from mnemobot.base.file_lock import private_file_lock
from mnemobot.memory.store.scope_paths import ScopePaths

ARCHIVE_DIR_NAME = "archive"
# Previous MEMORY.md versions kept in a scope's archive/ (oldest removed first). Not
# measured; a few months of rewrites every six hours, a few hundred KB.
KEEP_VERSIONS = 50
_VERSION_FILE = re.compile(r"^MEMORY\.(\d{8}T\d{6}Z)\.md$")
_STAMP_FORMAT = "%Y%m%dT%H%M%SZ"


def memory_file_lock(memory_file: Path) -> FileLock:
    """The lock every writer of this MEMORY.md holds (the memory tool takes the same file)."""
    return private_file_lock(memory_file.with_name(f".{memory_file.name}.lock"))


def archive_dir(paths: ScopePaths) -> Path:
    return paths.directory / ARCHIVE_DIR_NAME


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """One archived MEMORY.md; `version` is its UTC timestamp, e.g. 20261123T025734Z."""

    version: str
    path: Path

    @property
    def saved_at(self) -> datetime:
        return datetime.strptime(self.version, _STAMP_FORMAT).replace(tzinfo=UTC)

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def list_versions(paths: ScopePaths) -> list[MemoryVersion]:
    """Archived versions, newest first."""
    directory = archive_dir(paths)
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = _VERSION_FILE.match(path.name)
        if match and path.is_file():
            found.append(MemoryVersion(match.group(1), path))
    return sorted(found, key=lambda v: v.version, reverse=True)


def archive_version(
    paths: ScopePaths, data: bytes, now: float, *, keep: int = KEEP_VERSIONS
) -> MemoryVersion:
    """Store `data` (the MEMORY.md about to be replaced) as a new version; prune to `keep`."""
    directory = archive_dir(paths)
    directory.mkdir(parents=True, exist_ok=True)
    # Versions are named by the second; two rewrites in one second take the next free one,
    # so names stay unique and sort in the order the versions were made.
    moment = int(now)
    newest = list_versions(paths)
    if newest:
        moment = max(moment, int(newest[0].saved_at.timestamp()) + 1)
    stamp = datetime.fromtimestamp(moment, UTC).strftime(_STAMP_FORMAT)
    version = MemoryVersion(stamp, directory / f"MEMORY.{stamp}.md")
    write_atomic(version.path, data)
    for old in list_versions(paths)[max(keep, 1) :]:
        old.path.unlink(missing_ok=True)
    return version


def find_version(paths: ScopePaths, name: str) -> MemoryVersion | None:
    """The version named `name`: its timestamp or its file name."""
    name = name.strip()
    for version in list_versions(paths):
        if name in (version.version, version.path.name):
            return version
    return None


def restore_version(
    paths: ScopePaths, version: MemoryVersion, now: float, *, keep: int = KEEP_VERSIONS
) -> None:
    """Put `version` back as MEMORY.md; the current file is archived first."""
    data = version.path.read_bytes()
    with memory_file_lock(paths.memory_file):
        if paths.memory_file.is_file():
            archive_version(paths, paths.memory_file.read_bytes(), now, keep=keep + 1)
        write_atomic(paths.memory_file, data)


def read_memory_text(path: Path, max_chars: int) -> str:
    """MEMORY.md as the rewrite sees it: lenient UTF-8, BOM dropped, at most `max_chars`."""
    return read_text_lenient(path, max_chars=max_chars).lstrip("\ufeff")
