"""AgentSession: a chat's conversation, stored as `sessions/<channel>:<chatId>.json` (DESIGN §3)."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from memory.atomic_file import append_jsonl, write_atomic
from memory.items import from_iso, to_iso

log = logging.getLogger(__name__)

_SESSION_KEY = re.compile(r"^[A-Za-z0-9_-]+:[A-Za-z0-9_@.:-]+$")

Message = dict[str, Any]


class InvalidSessionKey(ValueError):
    pass


def check_session_key(key: str) -> str:
    """Session keys become file names: allow only `<channel>:<chatId>[:<thread>]` characters."""
    if not _SESSION_KEY.match(key) or ".." in key or len(key) > 200:
        raise InvalidSessionKey(
            f"invalid chat key {key!r}: use <channel>:<chatId>, e.g. console:local or telegram:42"
        )
    return key


@dataclass(slots=True)
class AgentSession:
    id: str
    channel_type: str
    chat_id: str
    messages: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    @classmethod
    def new(cls, key: str) -> AgentSession:
        channel, _, chat_id = key.partition(":")
        return cls(id=key, channel_type=channel, chat_id=chat_id)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "channelType": self.channel_type,
            "chatId": self.chat_id,
            "messages": self.messages,
            "metadata": self.metadata,
            "state": self.state,
            "createdAt": to_iso(self.created_at),
            "updatedAt": to_iso(self.updated_at),
        }

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> AgentSession:
        messages = data["messages"]
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise ValueError("messages must be a list of objects")
        return cls(
            id=str(data["id"]),
            channel_type=str(data["channelType"]),
            chat_id=str(data["chatId"]),
            messages=messages,
            metadata=dict(data.get("metadata") or {}),
            state=dict(data.get("state") or {}),
            created_at=from_iso(data["createdAt"]),
            updated_at=from_iso(data["updatedAt"]),
        )


class SessionStore:
    """Sessions cached in memory, loaded lazily, saved atomically after every turn."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: dict[str, AgentSession] = {}

    def path_for(self, key: str) -> Path:
        return self.directory / f"{check_session_key(key)}.json"

    def offload_path_for(self, key: str) -> Path:
        return self.directory / f"{check_session_key(key)}.log.jsonl"

    def get(self, key: str) -> AgentSession:
        session = self._cache.get(key)
        if session is None:
            session = self._load(key)
            self._cache[key] = session
        return session

    def _load(self, key: str) -> AgentSession:
        path = self.path_for(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return AgentSession.new(key)
        try:
            session = AgentSession.from_json_dict(orjson.loads(data))
            if session.id != key:
                raise ValueError(f"file holds session {session.id!r}")
            return session
        except (orjson.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
            aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
            path.replace(aside)
            log.warning(
                "session %s was unreadable (%s); moved it to %s and started fresh",
                key,
                exc,
                aside.name,
            )
            return AgentSession.new(key)

    def save(self, session: AgentSession) -> None:
        session.updated_at = time.time()
        data = orjson.dumps(session.to_json_dict(), option=orjson.OPT_INDENT_2)
        write_atomic(self.path_for(session.id), data)

    def append_offload(self, key: str, messages: list[Message]) -> None:
        """Append raw messages to the chat's append-only log before they leave the session."""
        append_jsonl(self.offload_path_for(key), messages)

    def cached_keys(self) -> list[str]:
        return list(self._cache)
