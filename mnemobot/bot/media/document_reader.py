"""Documents read within their budget (`media.readerSeconds`, `media.readerMemoryMb`), in a
reader process (`bounded`), and what went wrong said in one line.

A document that used up its budget is recorded beside its kept file
(`received/12-lease.pdf.overrun.json`), so the same message read again (the inbox replayed
after a crash or a restart, /retry) gets its line at once instead of costing the budget
again; raising the budget that was used up reads it again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.bot.media.bounded import Budget, OverBudget, ReaderFailed, ReaderPool, ReaderRefused
from mnemobot.bot.media.document_text import DocumentExtract, UnreadableDocument
from mnemobot.config.runtime import MediaConfig

log = logging.getLogger(__name__)

OVERRUN_SUFFIX = ".overrun.json"
MEGABYTE = 1_000_000


@dataclass(frozen=True, slots=True)
class Overrun:
    """What a document used up, and the budget it had."""

    what: str  # "time", "memory" or "crashed"
    seconds: float
    memory_mb: int

    def holds_for(self, media: MediaConfig) -> bool:
        """Whether reading it again would only do the same (its budget was not raised)."""
        if self.what == "time":
            return media.reader_seconds <= self.seconds
        if self.what == "memory":
            return media.reader_memory_mb <= self.memory_mb
        return True

    def line(self) -> str:
        if self.what == "time":
            return f"reading it took longer than {self.seconds:g} s (media.readerSeconds)"
        if self.what == "memory":
            return f"reading it needed more than {self.memory_mb:,} MB (media.readerMemoryMb)"
        return "its reader stopped on it (the file may be damaged or made to harm)"


def overrun_path(kept: Path) -> Path:
    return kept.with_name(kept.name + OVERRUN_SUFFIX)


def read_overrun(kept: Path) -> Overrun | None:
    try:
        data: Any = orjson.loads(overrun_path(kept).read_bytes())
        return Overrun(str(data["what"]), float(data["seconds"]), int(data["memoryMb"]))
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None  # unreadable: read the document, which writes it again


def write_overrun(kept: Path, overrun: Overrun) -> None:
    record = {"what": overrun.what, "seconds": overrun.seconds, "memoryMb": overrun.memory_mb}
    write_atomic(overrun_path(kept), orjson.dumps(record))


class DocumentReader:
    def __init__(self, pool: ReaderPool) -> None:
        self.pool = pool

    async def read(
        self,
        data: bytes,
        kept: Path | None,
        name: str,
        mime_type: str | None,
        media: MediaConfig,
    ) -> DocumentExtract:
        """The document's text; raises UnreadableDocument with the line saying why not.
        `kept`: where the file is kept (its overrun is recorded beside it), if it is."""
        if kept is not None:
            before = await asyncio.to_thread(read_overrun, kept)
            if before is not None and before.holds_for(media):
                raise UnreadableDocument(f"{before.line()} before, so I did not read it again")
        params = {
            "name": name,
            "mime_type": mime_type,
            "max_pages": media.document_max_pages,
            "max_chars": media.document_max_chars,
        }
        budget = Budget(media.reader_seconds, media.reader_memory_mb * MEGABYTE)
        try:
            read = await self.pool.run("document", params, data, budget)
        except ReaderRefused as exc:
            raise UnreadableDocument(str(exc)) from None
        except ReaderFailed as exc:
            log.info("unreadable document %s: %s", name, exc)
            raise UnreadableDocument(f"it looks damaged ({exc.kind})") from None
        except OverBudget as exc:
            overrun = Overrun(exc.what, media.reader_seconds, media.reader_memory_mb)
            log.warning("reading %s: %s", name, overrun.line())
            if kept is not None:
                try:
                    await asyncio.to_thread(write_overrun, kept, overrun)
                except OSError as error:
                    log.warning("could not record the overrun of %s: %s", name, error)
            raise UnreadableDocument(overrun.line()) from None
        except OSError as exc:
            log.warning("no reader process for %s: %s", name, exc)
            raise UnreadableDocument("no reader process could be started") from None
        return DocumentExtract(str(read["text"]), cut=read.get("cut"), pages=read.get("pages"))
