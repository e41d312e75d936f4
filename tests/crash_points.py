"""Crash points for child processes: the child kills itself (SIGKILL) at an exact moment of
a file write, instead of a kill from outside that may or may not land mid-write.

`run_to_crash(script, point, *args)` runs `script` in a fresh interpreter, which calls
`arm()` (or `arm(skip)`) before the write to kill: the first write of that kind after it
(or the one after `skip` more) dies there. The points:

- "mid-write": a whole-file rewrite (`write_atomic`) with half of its temp file written;
- "before-replace": the temp file written and fsynced, not yet put in the file's place;
- "after-replace": right after it took the file's place;
  both count only files whose path holds `arm`'s `inside`, when given;
- "mid-append": a JSONL append (`append_bytes`) with half of its bytes written;
- "after-append": right after a whole append;
  both count only appends to a file whose path holds `arm`'s `inside` and of bytes
  holding its `holding` (an imported message's items: `inside="items/episodic",
  holding=b"tg-export:3"`), when given;
- "before-rmtree": a folder about to be removed (`shutil.rmtree`), counting only folders
  whose path holds `arm`'s `inside`.

`start_to_crash` starts the same child and returns at once, for a test that talks to it
(a bot) until it dies. Only the OS calls are wrapped (`os.fdopen`, `os.replace`,
`os.write`, `shutil.rmtree`), never our code.
A script may also die at a point of its own (`_die()`), named by `CRASH_POINT` too.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

_PRELUDE = """
import os, shutil, signal, sys

def _die():
    os.kill(os.getpid(), signal.SIGKILL)

class _HalfWritten:
    def __init__(self, handle):
        self._handle = handle
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self._handle.close()
    def write(self, data):
        self._handle.write(bytes(data)[: len(data) // 2])
        self._handle.flush()
        _die()

def arm(skip=0, inside="", holding=b""):
    point = os.environ["CRASH_POINT"]
    real_fdopen, real_replace, real_write = os.fdopen, os.replace, os.write
    real_rmtree = shutil.rmtree
    left = [skip]

    def now():
        left[0] -= 1
        return left[0] < 0

    def aimed(fd, data):
        if not inside and not holding:
            return True
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return False
        return inside in target and holding in bytes(data)

    def fdopen(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)
        return _HalfWritten(handle) if now() else handle

    def replace(src, dst):
        aimed_at = inside in str(dst)
        if point == "before-replace" and aimed_at and now():
            _die()
        real_replace(src, dst)
        if point == "after-replace" and aimed_at and now():
            _die()

    def write(fd, data):
        if not (aimed(fd, data) and now()):
            return real_write(fd, data)
        real_write(fd, bytes(data)[: len(data) // 2] if point == "mid-append" else data)
        _die()

    def rmtree(path, *args, **kwargs):
        if inside in str(path) and now():
            _die()
        return real_rmtree(path, *args, **kwargs)

    if point == "mid-write":
        os.fdopen = fdopen
    elif point in ("before-replace", "after-replace"):
        os.replace = replace
    elif point in ("mid-append", "after-append"):
        os.write = write
    elif point == "before-rmtree":
        shutil.rmtree = rmtree
    else:
        raise ValueError(point)
"""


def run_to_crash(script: str, point: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `script` (which calls `arm()` before the write to kill) until it dies at `point`."""
    result = subprocess.run(
        [sys.executable, "-c", _PRELUDE + script, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**_environment(), "CRASH_POINT": point},
        check=False,
    )
    # Killed at the crash point, not ended by an error or by running past it.
    assert result.returncode == -signal.SIGKILL, (result.returncode, result.stderr[-2000:])
    return result


def start_to_crash(
    script: str, point: str, *args: str, env: dict[str, str], cwd: Path
) -> subprocess.Popen[str]:
    """Start `script` (which calls `arm()`) with the crash point armed; `env` is added to
    the test environment; its stdin is a pipe the caller may write to. The caller waits
    for the SIGKILL (`returncode == -SIGKILL`)."""
    return subprocess.Popen(
        [sys.executable, "-c", _PRELUDE + script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**_environment(), **env, "CRASH_POINT": point},
        cwd=cwd,
    )


def _environment() -> dict[str, str]:
    from tests.conftest import subprocess_env

    return subprocess_env()
