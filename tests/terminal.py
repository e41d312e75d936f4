"""Run `mnemobot` with its stderr on a pseudo-terminal, as a person at a terminal sees it."""

from __future__ import annotations

import errno
import os
import pty
import select
import subprocess
import sys
import time

from tests.conftest import subprocess_env


def mnemobot_command(*args: str) -> list[str]:
    """`python -m bot ARGS`, the command `mnemobot ARGS` runs."""
    return [sys.executable, "-m", "mnemobot", *args]


def run_with_terminal_stderr(*args: str, timeout: float = 120) -> tuple[int, str, str]:
    """Run `mnemobot ARGS` with stderr on a pseudo-terminal: (returncode, stdout, stderr)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        mnemobot_command(*args),
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=subprocess_env(),
    )
    os.close(terminal)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([controller], [], [], max(0.0, remaining))
            if not readable:
                raise TimeoutError(f"mnemobot {' '.join(args)} ran over {timeout} s")
            try:
                chunk = os.read(controller, 4096)
            except OSError as exc:  # EIO: every writer closed the terminal
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.stdout is not None
        stdout = process.stdout.read().decode()
        returncode = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()
    return returncode, stdout, b"".join(chunks).decode(errors="replace")
