"""Moving a memory scope to a new key: what a chat remembers follows it to its new id.

A Telegram group upgraded to a supergroup gets a new chat id, so its scope key changes
(`telegram:-42` -> `telegram:-100...`). `move_scope` renames the scope's directory and
rewrites the `scope` of every item line, and its `references` with `rename_ref` when
given (message ids count per chat, so the old chat's `tg:5` is not the new chat's).

When the new scope already has files (a message reached the new chat first), the old
files are merged in: item files and daily notes are joined (old lines first), a MEMORY.md
of both becomes one, the old part first, and anything else the new scope lacks is moved.
Every write is atomic; the old directory goes last, so a crash mid-way leaves the old
scope to move again (item ids make a second merge of the same lines harmless: the newest
line of an id wins on load).

Callers hold both scopes' locks and drop them from any cache afterwards: the bot moves a
scope through `MemoryForget.move_scope`, which does.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.memory.store.scope_paths import MEMORY_FILE_NAME, ScopePaths

RenameRef = Callable[[str], str]


def keep_ref(ref: str) -> str:
    """References unchanged (a move within one chat's ids)."""
    return ref


def _with_scope(data: bytes, old: str, new: str, rename_ref: RenameRef) -> bytes:
    """Item lines with `"scope": old` rewritten to `new` and their references renamed;
    lines that are not items (tombstones, torn lines) kept as they are."""
    lines = []
    for line in data.splitlines():
        if old.encode() in line:
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                lines.append(line)
                continue
            if isinstance(record, dict) and record.get("scope") == old:
                record["scope"] = new
                refs = record.get("references")
                if isinstance(refs, list):
                    record["references"] = [
                        rename_ref(r) if isinstance(r, str) else r for r in refs
                    ]
                line = orjson.dumps(record)
        lines.append(line)
    return b"\n".join(lines) + b"\n" if lines else b""


def _merged(source: Path, target: Path, old: str, new: str, rename_ref: RenameRef) -> bytes:
    old_data = source.read_bytes()
    if source.suffix == ".jsonl":
        old_data = _with_scope(old_data, old, new, rename_ref)
    if not target.exists():
        return old_data
    new_data = target.read_bytes()
    separator = b"\n" if source.name == MEMORY_FILE_NAME else b""
    if old_data and not old_data.endswith(b"\n"):
        old_data += b"\n"
    return old_data + separator + new_data


def move_scope(workspace: Path, old: str, new: str, rename_ref: RenameRef = keep_ref) -> int:
    """Move scope `old`'s files to scope `new`; returns how many files moved (0: none)."""
    source = ScopePaths(workspace, old).directory
    target = ScopePaths(workspace, new).directory
    if not source.is_dir():
        return 0
    files = sorted(p for p in source.rglob("*") if p.is_file())
    if not target.exists():
        # Rewrite the item lines in place first, then one rename moves everything.
        for path in files:
            if path.suffix == ".jsonl":
                write_atomic(path, _with_scope(path.read_bytes(), old, new, rename_ref))
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)
        return len(files)
    for path in files:
        destination = target / path.relative_to(source)
        mergeable = path.suffix in {".jsonl", ".md"} and not path.name.startswith(".")
        if mergeable:
            write_atomic(destination, _merged(path, destination, old, new, rename_ref))
        elif not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
    shutil.rmtree(source)
    return len(files)
