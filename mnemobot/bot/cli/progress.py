"""Progress of long commands (`memory import`, benches, evals): a one-line bar on a
terminal; `memory import` also says how far it got in a log, at a low rate."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

# A long import says how far it got this often where stderr is no terminal (a log, a
# pipe): enough to see it is alive, too rarely to bury what else the log holds.
PROGRESS_LINE_SECONDS = 30


class ProgressBar:
    """A one-line `\\r` progress bar on a terminal stream (no dependency)."""

    def __init__(self, total: int, stream: TextIO, width: int = 30, label_width: int = 24) -> None:
        self.total = max(1, total)
        self.label_width = label_width
        self.stream = stream
        self.width = width
        self.done = 0
        self._shown = -1
        self.started = time.perf_counter()

    def advance(self, steps: int = 1, label: str = "") -> None:
        self.done += steps
        percent = self.done * 100 // self.total
        if percent == self._shown:
            return
        self._shown = percent
        filled = self.width * min(self.done, self.total) // self.total
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = time.perf_counter() - self.started
        self.stream.write(
            f"\r[{bar}] {self.done * 100 / self.total:5.1f}% {elapsed:6.1f}s "
            f"{label[: self.label_width]:<{self.label_width}}"
        )
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def terminal_progress(total: int, stream: TextIO | None = None) -> ProgressBar | None:
    """A bar on `stream` (stderr by default) if it is a terminal, else None.

    Redirected to a file or a pipe, `\\r` frames would only bury the output a person or
    a script reads afterwards, so there is no bar there.
    """
    stream = sys.stderr if stream is None else stream
    return ProgressBar(total, stream) if stream.isatty() else None


class ImportProgress:
    """How many of an export's messages an import has read: on a terminal a bar with the
    counts, else a line at most every `every` seconds (none for an import quicker
    than that)."""

    def __init__(
        self,
        total: int,
        stream: TextIO,
        *,
        every: float = PROGRESS_LINE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.stream = stream
        self.every = every
        self.clock = clock
        self.bar = ProgressBar(total, stream, label_width=32) if stream.isatty() else None
        self.started = clock()
        self._next_line = self.started + every

    def read(self, count: int) -> None:
        """`count` messages read so far."""
        said = f"{count:,} of ~{self.total:,} messages"
        if self.bar is not None:
            self.bar.advance(count - self.bar.done, label=said)
            return
        now = self.clock()
        if now < self._next_line:
            return
        self._next_line = now + self.every
        share = count * 100 // max(1, self.total)
        self.stream.write(
            f"mnemobot: memory import: read {said} ({share}%), {now - self.started:.0f} s\n"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def import_progress(total: int, stream: TextIO | None = None) -> ImportProgress:
    """Progress of an import of `total` messages on `stream` (stderr by default)."""
    return ImportProgress(total, sys.stderr if stream is None else stream)
