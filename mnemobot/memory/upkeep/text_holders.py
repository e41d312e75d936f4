"""What else holds a scope's conversations, for the erasure of forgotten texts.

The erasure (`MemoryForget.erase_forgotten`) redacts the scope's memory files and the
sessions and offload logs on the workspace itself; what the bot keeps elsewhere is handed
to it by the part that keeps it:

- `SessionHolds`: how a chat's conversation is held against a turn while it is redacted,
  and the copies of it kept outside the workspace. On one workspace it is the session's
  lock file (the one a turn holds, `FileSessionHolds`); with replicas it is the chat's
  lease, under which the session's value in Redis is redacted too.
- `TextKeeper`: more files that quote what was said (a channel's delivery journals),
  redacted by their owner, who knows how to do it while it writes to them.

Each is called from the erasure's worker thread, and may be called again over what an
earlier, cut run did (a crash keeps the texts pending until every part is done).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from filelock import Timeout

from mnemobot.base.file_lock import private_file_lock
from mnemobot.memory.store.scope_paths import GLOBAL_SCOPE

# A JSON value with every string holding a forgotten text replaced by the forgotten mark,
# and how many strings were replaced.
Redact = Callable[[Any], tuple[Any, int]]


class SessionHolds(Protocol):
    def stored_keys(self, scope: str) -> list[str]:
        """Session keys of the scope kept outside the workspace's files."""
        ...

    def hold(
        self, sessions_dir: Path, key: str, wait_seconds: float
    ) -> AbstractContextManager[bool]:
        """Keep turns of the session's chat out while the block runs; yields False when a
        turn still held it after `wait_seconds` (the session is then left for later)."""
        ...

    def redact_stored(self, key: str, redact: Redact) -> int:
        """Redact the copy of the session kept outside the workspace (while held); how many
        strings changed."""
        ...

    def after_erasure(self) -> str | None:
        """Once texts were erased: make the store drop its old copies (a line saying what
        was done or why not), or None."""
        ...


@dataclass(frozen=True, slots=True)
class KeptRedaction:
    """What a `TextKeeper` did: the files changed or handed on, one line each, and what
    it could not redact yet (a reply still owed its delivery), so the texts stay pending."""

    files: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)


class TextKeeper(Protocol):
    def redact_texts(self, scope: str, needles: list[str], wait_seconds: float) -> KeptRedaction:
        """Redact `needles` (forgotten texts, `normalize_content`d) from what the kept
        files hold of the scope's chats, waiting up to `wait_seconds` for what is still
        being answered or delivered."""
        ...


def scope_holds_key(scope: str, key: str) -> bool:
    """Whether a chat or session key (`telegram:42`, `telegram:42:7`) is of `scope`."""
    return scope == GLOBAL_SCOPE or key == scope or key.startswith(scope + ":")


class FileSessionHolds:
    """Sessions on the workspace alone, each held by its lock file."""

    def stored_keys(self, scope: str) -> list[str]:
        return []

    @contextlib.contextmanager
    def hold(self, sessions_dir: Path, key: str, wait_seconds: float) -> Iterator[bool]:
        lock = private_file_lock(sessions_dir / f"{key}.lock")
        try:
            lock.acquire(timeout=wait_seconds)
        except Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def redact_stored(self, key: str, redact: Redact) -> int:
        return 0

    def after_erasure(self) -> str | None:
        return None


FILE_SESSION_HOLDS = FileSessionHolds()
