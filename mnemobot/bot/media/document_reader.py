"""Documents read within their budget (`ReaderLimits`), in a reader process (`bounded`),
and what went wrong said in one line.

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
from mnemobot.bot.i18n import N_
from mnemobot.bot.media.bounded import Budget, OverBudget, ReaderFailed, ReaderPool, ReaderRefused
from mnemobot.bot.media.document_text import DocumentExtract, UnreadableDocument

log = logging.getLogger(__name__)

OVERRUN_SUFFIX = ".overrun.json"
MEGABYTE = 1_000_000


@dataclass(frozen=True, slots=True)
class ReaderLimits:
    """What reading one file someone sent may take: constants, not settings (a test
    passes tighter ones). The budgets were not measured against real files; they stop the
    hostile PDFs of tests/test_hostile_files.py (a 13 KB PDF keeps pypdf busy for minutes,
    an 80 KB stream inflates to 80 MB), docs/media.md."""

    # Seconds one document may take to be read (and one recording to be measured), in a
    # process of its own killed past it; the file is kept and the user told. A 4-page PDF
    # reads in about 12 ms (bench reader_overhead).
    seconds: float = 60
    # Memory (address space, MB) reading one document may take; past it the read fails.
    memory_mb: int = 1_024
    # Documents read at once, each in a process of its own (an idle reader holds about
    # 50 MB, bench reader_overhead); more wait their turn.
    processes: int = 2
    # PDF pages read, and characters of a document's text kept and indexed, at most; the
    # rest stays in the kept file. Not measured; a book.
    max_pages: int = 300
    max_chars: int = 1_000_000


DEFAULT_READER_LIMITS = ReaderLimits()


@dataclass(frozen=True, slots=True)
class Overrun:
    """What a document used up, and the budget it had."""

    what: str  # "time", "memory" or "crashed"
    seconds: float
    memory_mb: int

    def holds_for(self, limits: ReaderLimits) -> bool:
        """Whether reading it again would only do the same (its budget was not raised)."""
        if self.what == "time":
            return limits.seconds <= self.seconds
        if self.what == "memory":
            return limits.memory_mb <= self.memory_mb
        return True

    def line(self) -> str:
        return str(self.refusal(again=False))

    def refusal(self, *, again: bool) -> UnreadableDocument:
        """The line for the user; `again`: it was used up before, so it was not read now."""
        if self.what == "time":
            if again:
                message = N_(
                    "reading it took longer than {seconds:g} s before, so I did not read it again"
                )
            else:
                message = N_("reading it took longer than {seconds:g} s")
            return UnreadableDocument(message, seconds=self.seconds)
        if self.what == "memory":
            if again:
                message = N_(
                    "reading it needed more than {megabytes} MB before, so I did not read it again"
                )
            else:
                message = N_("reading it needed more than {megabytes} MB")
            return UnreadableDocument(message, megabytes=self.memory_mb)
        if again:
            message = N_(
                "its reader stopped on it before (the file may be damaged or made to harm), "
                "so I did not read it again"
            )
        else:
            message = N_("its reader stopped on it (the file may be damaged or made to harm)")
        return UnreadableDocument(message, permanent=True)


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
    def __init__(self, pool: ReaderPool, limits: ReaderLimits = DEFAULT_READER_LIMITS) -> None:
        self.pool = pool
        self.limits = limits

    async def read(
        self,
        data: bytes,
        kept: Path | None,
        name: str,
        mime_type: str | None,
    ) -> DocumentExtract:
        """The document's text; raises UnreadableDocument with the line saying why not.
        `kept`: where the file is kept (its overrun is recorded beside it), if it is."""
        if kept is not None:
            before = await asyncio.to_thread(read_overrun, kept)
            limits = self.limits
            if before is not None and before.holds_for(limits):
                raise before.refusal(again=True)
        params = {
            "name": name,
            "mime_type": mime_type,
            "max_pages": self.limits.max_pages,
            "max_chars": self.limits.max_chars,
        }
        budget = Budget(self.limits.seconds, self.limits.memory_mb * MEGABYTE)
        try:
            read = await self.pool.run("document", params, data, budget)
        except ReaderRefused as exc:
            raise UnreadableDocument.of(exc) from None
        except ReaderFailed as exc:
            log.info("unreadable document %s: %s", name, exc)
            raise UnreadableDocument(
                N_("it looks damaged ({kind})"), permanent=True, kind=exc.kind
            ) from None
        except OverBudget as exc:
            overrun = Overrun(exc.what, self.limits.seconds, self.limits.memory_mb)
            log.warning("reading %s: %s", name, overrun.line())
            if kept is not None:
                try:
                    await asyncio.to_thread(write_overrun, kept, overrun)
                except OSError as error:
                    log.warning("could not record the overrun of %s: %s", name, error)
            raise overrun.refusal(again=False) from None
        except OSError as exc:
            log.warning("no reader process for %s: %s", name, exc)
            raise UnreadableDocument(N_("no reader process could be started")) from None
        return DocumentExtract(
            str(read["text"]),
            cut=read.get("cut"),
            pages=read.get("pages"),
            read_pages=read.get("readPages"),
            read_chars=read.get("readChars"),
        )
