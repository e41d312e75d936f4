"""A one-line progress bar for long commands (`memory import`, benches, evals), shown only
on a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """A one-line `\\r` progress bar on a terminal stream (no dependency)."""

    def __init__(self, total: int, stream: TextIO, width: int = 30) -> None:
        self.total = max(1, total)
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
            f"\r[{bar}] {self.done * 100 / self.total:5.1f}% {elapsed:6.1f}s {label[:24]:<24}"
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
