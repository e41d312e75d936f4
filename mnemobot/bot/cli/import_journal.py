"""The import's journal: an imported message's appends written so that a kill at any
moment leaves, after the next run, the message whole or not begun.

A message appends to several files: its daily note line, its turn and the items derived
from it to the day's item file, the facts promoted and the standing preferences to the
durable layers' files, its refs to the import list. Each append is whole
(`base.atomic_file`), but a kill between two left the turn, which names the message,
without what was derived from it, and the next run, finding the message's ref, skipped
it: those items were lost for good (review).

So the message's appends are held while it is recorded (`held_appends`) and written
afterwards (`ImportJournal.write`): first all of them, with each file's size before,
as one entry of `.import-journal` (one write, with its checksum: read whole or not at
all), then each file's in one append. The next run finishes an entry its files hold
part of (`finish_interrupted`): each such file is cut back to its size before and its
append written again, the same bytes (the items' ids and times as first written):
nothing is there twice, nothing lost, and the items are those of a run never killed.
An entry cut short itself was followed by nothing: its message is imported anew. The
journal keeps the last message's entry only, and a finished import removes it.

An entry whose last file holds its append whole was written whole (the kill came while
the next message was read): nothing is to finish, whatever its other files hold since.
Files written by something else after the kill (the bot, `memory compact`) are not cut
back: a file holding other bytes than the entry's after its size before, or one going on
past its append while another lacks part of its own. The entry is dropped, and its
message stays as the kill left it.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from mnemobot.base.atomic_file import append_bytes

JOURNAL_FILE = ".import-journal"


@dataclass(frozen=True, slots=True)
class FileAppend:
    """One file's append of a message: `data` written at `size`, the file's size before."""

    path: Path
    size: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The message a killed import was writing: finished now, or left as the kill left it
    (its files were written by something else since)."""

    refs: list[str]
    finished: bool


class _Found(Enum):
    """What a file holds from its size before a message's append on."""

    WHOLE = "whole"
    # The append whole, then bytes written after it.
    MORE = "more"
    # The start of the append (none of it, or bytes up to where a kill cut it).
    CUT = "cut"
    OTHER = "other"


class ImportJournal:
    """Writes each message's held appends through the journal of the scope `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / JOURNAL_FILE
        # The start of every path written here (pathlib's `relative_to` took more of an
        # entry's time than the rest of it).
        self._prefix = os.path.join(directory, "")
        self._fd: int | None = None
        # A message's appends begun and not all written (an error stopped them): its
        # entry stays for the next run to finish.
        self._unfinished = False

    def write(self, refs: Sequence[str], held: Sequence[tuple[Path, bytes]]) -> None:
        """Write one message's appends (`held_appends`, in order): the entry, then the files."""
        appends = [
            FileAppend(path, _size(path), data) for path, data in _by_file(held).items() if data
        ]
        body = orjson.dumps(
            {
                "refs": list(refs),
                "appends": [[self._name(a.path), a.size, a.data.decode()] for a in appends],
            }
        )
        self._unfinished = True
        self._put(b"%08x %s\n" % (zlib.crc32(body), body))
        for append in appends:
            append_bytes(append.path, append.data)
        self._unfinished = False

    def _name(self, path: Path) -> str:
        """`path` from the scope's folder on, as `_entry` reads it."""
        full = os.fspath(path)
        if full.startswith(self._prefix):
            return full[len(self._prefix) :]
        return path.relative_to(self.directory).as_posix()

    def _put(self, line: bytes) -> None:
        """The entry over the one before, from the file's start (the entry before was
        written whole to its files). Never truncated: ext4 writes a file truncated to
        nothing out to disk as it is closed (`auto_da_alloc`), and truncated once a
        message the journal made an import take twice as long and more (measured: 300,000
        messages in 7:23 against 3:23). What a longer entry before leaves after the new
        one's line is not read, and a line a kill cut reads as cut: its checksum is not
        its bytes'."""
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.lseek(self._fd, 0, os.SEEK_SET)
        view = memoryview(line)
        while view:
            written = os.write(self._fd, view)
            if written <= 0:
                raise OSError(f"could not write {self.path.name}: nothing written")
            view = view[written:]

    def close(self) -> None:
        """The import ended (done, or stopped between messages): the journal goes, unless
        a message's appends were stopped half way."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if not self._unfinished:
            self.path.unlink(missing_ok=True)


def finish_interrupted(directory: Path) -> Interrupted | None:
    """Finish the message an import killed mid-way was writing into the scope `directory`
    (see the module docstring); None when no message was cut short."""
    journal = directory / JOURNAL_FILE
    try:
        raw = journal.read_bytes()
    except FileNotFoundError:
        return None
    entry = _entry(directory, raw)
    if entry is None:
        # Cut short while it was written: nothing after it was.
        journal.unlink()
        return None
    refs, appends = entry
    found = [_found(append) for append in appends]
    if not found or found[-1] in (_Found.WHOLE, _Found.MORE):
        # The files are written in the entry's order: its last append whole, the message
        # was (killed before the next began). A file rewritten since (`memory compact`)
        # holds other bytes, and nothing was lost.
        journal.unlink()
        return None
    cut = [append for append, state in zip(appends, found, strict=True) if state is _Found.CUT]
    # Written after the kill (a file of the message went on past its append while another
    # lacks part of its own): finished now, the message would come after what followed it.
    if _Found.OTHER in found or (cut and _Found.MORE in found):
        journal.unlink()
        return Interrupted(refs, finished=False)
    for append in cut:
        if append.path.exists():
            os.truncate(append.path, append.size)
        append_bytes(append.path, append.data)
    journal.unlink()
    return Interrupted(refs, finished=True) if cut else None


def _by_file(held: Sequence[tuple[Path, bytes]]) -> dict[Path, bytes]:
    """Each file's appends joined, the files in the order of their first append."""
    parts: dict[Path, list[bytes]] = {}
    for path, data in held:
        parts.setdefault(path, []).append(data)
    return {path: b"".join(datas) for path, datas in parts.items()}


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _entry(directory: Path, raw: bytes) -> tuple[list[str], list[FileAppend]] | None:
    """The entry's refs and appends (its first line: see `ImportJournal._put`); None for
    one cut short (or not of this module)."""
    line, ended, _ = raw.partition(b"\n")
    checksum, _, body = line.partition(b" ")
    if not ended or checksum != b"%08x" % zlib.crc32(body):
        return None
    try:
        entry: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(entry, dict):
        return None
    refs, listed = entry.get("refs"), entry.get("appends")
    if not isinstance(refs, list) or not isinstance(listed, list):
        return None
    appends = []
    for one in listed:
        if not (isinstance(one, list) and len(one) == 3):
            return None
        name, size, text = one
        if not (isinstance(name, str) and isinstance(size, int) and isinstance(text, str)):
            return None
        relative = PurePosixPath(name)
        # Only files of the scope, whatever the entry says.
        if relative.is_absolute() or ".." in relative.parts or size < 0:
            return None
        appends.append(FileAppend(directory.joinpath(*relative.parts), size, text.encode()))
    return [str(ref) for ref in refs], appends


def _found(append: FileAppend) -> _Found:
    """What `append.path` holds from `append.size` on."""
    try:
        with open(append.path, "rb") as file:
            if os.fstat(file.fileno()).st_size < append.size:
                return _Found.OTHER
            start = max(append.size - 1, 0)
            file.seek(start)
            read = file.read(append.size - start + len(append.data) + 2)
    except FileNotFoundError:
        return _Found.CUT if append.size == 0 else _Found.OTHER
    before, after = read[: append.size - start], read[append.size - start :]
    # `append_bytes` starts on a fresh line after a line a kill left without its end.
    expected = append.data if before in (b"", b"\n") else b"\n" + append.data
    if after.startswith(expected):
        return _Found.WHOLE if len(after) == len(expected) else _Found.MORE
    return _Found.CUT if expected.startswith(after) else _Found.OTHER
