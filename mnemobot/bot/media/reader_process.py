"""The process that reads untrusted files for the bot: `python -m
mnemobot.bot.media.reader_process <parent pid> <module to preload>...`.

The bot (`bot.media.bounded`) sends one job at a time over stdin and reads the answer on
stdout; when a job runs past its time the bot kills this process and starts another, so
nothing a file does (a PDF that keeps pypdf busy for minutes, a decompression bomb, an
audio file that claims hours) reaches the bot's own process. Before each job the address
space is limited (RLIMIT_AS) to the job's memory budget, so an allocation past it fails
here as a MemoryError instead of growing the bot; after one, this process exits and the
bot starts a fresh one. It dies with the bot (PR_SET_PDEATHSIG) and holds none of the
bot's secrets (its environment is cut down to what Python needs).

Wire format, both ways: frames of a 4-byte big-endian length and that many bytes. A job is
two frames: a JSON header {"job", "params", "memoryBytes"} and the file's bytes. The answer
is one JSON frame: {"ok": result}, {"refused": "one line for the user", "values": {...},
"permanent": bool} (see `ReaderRefusal`), {"error":
"memory"} or {"error": "failed", "kind": "RecursionError", "detail": "..."}. The first
frame this process writes is {"ready": true}, once its modules are imported.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import struct
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

if TYPE_CHECKING:
    from mnemobot.bot.i18n import Words

HEADER = struct.Struct(">I")
# The jobs a reader runs: name -> "module:function", each `(params, data) -> JSON value`.
JOBS = {
    "document": "mnemobot.bot.media.document_text:document_job",
    "audio_seconds": "mnemobot.bot.media.audio_length:audio_seconds_job",
    "transcribe": "mnemobot.bot.media.local_whisper:transcribe_job",
}
PR_SET_PDEATHSIG = 1


class ReaderRefusal(Exception):
    """A job's own answer that the file cannot be read, as one line for the user (a
    password-protected PDF, a folder without a model): the process goes on.

    `message` is the line's English, marked for translation where it is written (`N_`),
    with named placeholders (`{seconds:g}`) filled from `values`: the bot says it in the
    reader's language (`said`), this process knows no reader. `permanent`: the file itself
    is at fault (it cannot be decoded), so reading it again would only do the same."""

    def __init__(self, message: str, /, *, permanent: bool = False, **values: object) -> None:
        super().__init__(message.format(**values) if values else message)
        self.message = message
        self.values: dict[str, Any] = values
        self.permanent = permanent

    def said(self, words: Words) -> str:
        """The line in `words`' language."""
        return words.gettext(self.message, **self.values)

    def wire(self) -> dict[str, Any]:
        return {"refused": self.message, "values": self.values, "permanent": self.permanent}


def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: BinaryIO) -> bytes | None:
    head = _read_exactly(stream, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    return _read_exactly(stream, size)


def _die_with_parent(parent: int) -> None:
    """Killed when the bot dies, even by SIGKILL: an orphan would read on for minutes."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the bot died before prctl
        os._exit(1)


def _limit_memory(limit: int | None) -> None:
    """The soft address-space limit for the next job (None: lifted again); the hard limit
    is left as it is, so it can be lifted."""
    try:
        import resource
    except ImportError:  # not on this platform: the time budget still holds
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = resource.RLIM_INFINITY if limit is None else limit
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
        soft = hard
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _job(name: str) -> Callable[[dict[str, Any], bytes], Any]:
    module, _, function = JOBS[name].partition(":")
    return getattr(importlib.import_module(module), function)


def run_job(header: dict[str, Any], data: bytes) -> tuple[dict[str, Any], bool]:
    """The answer to one job, and whether this process may take another."""
    job = _job(str(header["job"]))
    params = header.get("params") or {}
    memory = header.get("memoryBytes")
    _limit_memory(int(memory) if memory else None)
    try:
        return {"ok": job(params, data)}, True
    except MemoryError:
        return {"error": "memory"}, False
    except ReaderRefusal as exc:
        return exc.wire(), True
    except Exception as exc:
        # RecursionError, pypdf's LimitReachedError, a decoder's own: the file is bad.
        detail = str(exc).splitlines()[0][:200] if str(exc) else ""
        return {"error": "failed", "kind": type(exc).__name__, "detail": detail}, True
    finally:
        _limit_memory(None)


def serve(parent: int, preload: list[str]) -> None:
    _die_with_parent(parent)
    # The files are hostile: their libraries' complaints are expected, not news.
    logging.disable(logging.WARNING)
    # Ctrl-C in a terminal reaches the whole process group: the bot decides when this ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for module in preload:
        # An optional extra (PyAV) may be missing: its jobs say so when they run.
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    reader, writer = sys.stdin.buffer, sys.stdout.buffer
    writer.write(frame(orjson.dumps({"ready": True})))
    writer.flush()
    while True:
        head = _read_frame(reader)
        data = _read_frame(reader) if head is not None else None
        if head is None or data is None:
            return  # the bot closed the pipe
        answer, go_on = run_job(orjson.loads(head), data)
        writer.write(frame(orjson.dumps(answer)))
        writer.flush()
        if not go_on:
            return


if __name__ == "__main__":
    # From the module by its own name: the jobs' errors subclass its ReaderRefusal, not
    # this `__main__` copy's.
    from mnemobot.bot.media.reader_process import serve as serve_jobs

    serve_jobs(int(sys.argv[1]), sys.argv[2:])
