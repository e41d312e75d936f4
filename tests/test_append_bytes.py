"""Appends on a full disk: a record is written whole or not at all, and the error is raised."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mnemobot.base.atomic_file import append_bytes, read_jsonl

# A child process whose file-size limit stands in for a disk that fills up mid-write:
# the kernel then writes part of the data and fails the rest, as a full disk does.
_LIMITED_APPEND = """
import resource, signal, sys
from pathlib import Path
from mnemobot.base.atomic_file import append_bytes
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    append_bytes(Path(sys.argv[1]), b'{"n": "' + b"x" * 200 + b'"}\\n')
except OSError as exc:
    print("failed:", exc.errno)
else:
    print("appended")
"""


def test_an_append_cut_short_by_a_full_disk_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    append_bytes(path, b'{"n": 1}\n{"n": 2}\n')
    before = path.read_bytes()
    result = subprocess.run(
        [sys.executable, "-c", _LIMITED_APPEND, str(path), str(len(before) + 50)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.stdout.startswith("failed:"), result.stdout + result.stderr
    assert path.read_bytes() == before
    assert read_jsonl(path).skipped == 0


def test_an_append_after_a_torn_line_starts_on_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": 2, "tor')
    append_bytes(path, b'{"n": 3}\n', durable=True)
    read = read_jsonl(path)
    assert [record["n"] for record in read.records] == [1, 3]
    assert read.skipped == 1
