"""A BEAM conversation (Tavakoli et al., 2025, "Beyond a Million Tokens") as the eval reads
it, and written out as the Telegram Desktop export a user of the bot would import.

A conversation directory holds `chat.json` (or `chat_trunecated.json`, which BEAM's own
answer scripts prefer when it is there, and so does this reader) and
`probing_questions/probing_questions.json`. The chat is a list of batches (sessions),
each with `turns`, lists of messages `{"role", "id", "content", "time_anchor"?}`; the
first message of a session carries its date ("March-15-2024"). The questions map each
ability to a list of questions whose `source_chat_ids` name the evidence messages by `id`:
a list, or an object of lists (`original_info` / `updated_info` for a knowledge update,
`first_statement` / `second_statement`...).

Times: the data dates only sessions, so a session's first message is at 09:00 UTC of its
date and the next ones `message_gap_seconds` apart (a session without a date follows the
last message after a day). A user message ends in a generation marker (" ->-> 1,2", the
plan bullet it came from) that no user would type: it is cut off.

The export gives message `id` n+1 to BEAM's message n (Telegram's ids start at 1), so the
import's ref of BEAM message n is `tg-export:{n+1}` (`message_ref`; a private chat's
export has refs of its own, and an import made before that wrote `tg:{n+1}`), the user's
messages are from USER_NAME and the assistant's from ASSISTANT_NAME. A message longer
than an export can hold (`MAX_TEXT_CHARS`: 44 of the 500K set's, up to 246,463
characters) is sent as several, as a client sends a long text: the first keeps the id,
part k (from 1) gets `k * PART_ID_STRIDE + n + 1`, and `message_id_of` maps every
part's ref to message n.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from mnemobot.bot.channels.telegram.export_file import (
    EXPORT_REF_PREFIX,
    LIVE_REF_PREFIX,
    MAX_TEXT_CHARS,
)

CHAT_FILES = ("chat_trunecated.json", "chat.json")
QUESTIONS_FILE = Path("probing_questions") / "probing_questions.json"
USER_NAME = "User"
ASSISTANT_NAME = "Assistant"
_AUTHOR_IDS = {USER_NAME: "user1001", ASSISTANT_NAME: "user1002"}
SESSION_START_HOUR = 9
DEFAULT_MESSAGE_GAP_SECONDS = 60.0
# A session with no date starts this long after the last message.
UNDATED_SESSION_GAP = timedelta(days=1)
# The conversation's first session, when it has no date either.
UNDATED_START = datetime(2024, 1, 1, SESSION_START_HOUR, tzinfo=UTC)
KNOWLEDGE_UPDATE = "knowledge_update"
_MARKER = re.compile(r"\s*->->[^\n]*$")
# Above every message id of a conversation: the ids of a long message's later parts.
PART_ID_STRIDE = 10_000_000


@dataclass(frozen=True, slots=True)
class BeamMessage:
    id: int
    role: str
    text: str
    at: datetime

    @property
    def author(self) -> str:
        return USER_NAME if self.role == "user" else ASSISTANT_NAME

    @property
    def ref(self) -> str:
        return message_ref(self.id)


@dataclass(frozen=True, slots=True)
class BeamQuestion:
    ability: str
    text: str
    # Every evidence message id, once, in the file's order.
    evidence: tuple[int, ...]
    # A knowledge update: the messages holding the old value and those holding the new.
    older: tuple[int, ...] = ()
    newer: tuple[int, ...] = ()


@dataclass(slots=True)
class BeamConversation:
    name: str
    messages: list[BeamMessage]
    questions: list[BeamQuestion]
    # Evidence ids that name no message of the chat (left out of their question).
    skipped_evidence: int = 0
    # Questions that name no evidence (abstention): not asked.
    without_evidence: int = 0


def message_ref(message_id: int) -> str:
    """The ref `mnemobot memory import` gives BEAM message `message_id` of the export."""
    return f"{EXPORT_REF_PREFIX}{message_id + 1}"


def message_id_of(ref: str) -> int | None:
    """BEAM's message id behind an import ref (`tg-export:N`, or `tg:N` in a workspace
    imported before), or None for any other ref."""
    for prefix in (EXPORT_REF_PREFIX, LIVE_REF_PREFIX):
        if ref.startswith(prefix):
            try:
                return (int(ref[len(prefix) :]) - 1) % PART_ID_STRIDE
            except ValueError:
                return None
    return None


def conversation_dirs(path: Path) -> list[Path]:
    """`path` if it is a conversation directory, else its conversation subdirectories in
    numeric order (`100K/` -> `100K/1`, `100K/2`, ..., `100K/10`)."""
    if _chat_file(path) is not None:
        return [path]
    if not path.is_dir():
        raise ValueError(f"{path}: no such directory")
    found = [p for p in path.iterdir() if p.is_dir() and _chat_file(p) is not None]
    if not found:
        raise ValueError(
            f"{path}: neither a BEAM conversation (chat.json and {QUESTIONS_FILE}) "
            "nor a directory of them"
        )
    return sorted(found, key=_numeric_first)


def _numeric_first(path: Path) -> tuple[int, int, str]:
    return (0, int(path.name), "") if path.name.isdigit() else (1, 0, path.name)


def _chat_file(directory: Path) -> Path | None:
    for name in CHAT_FILES:
        if (directory / name).is_file() and (directory / QUESTIONS_FILE).is_file():
            return directory / name
    return None


def load_conversation(
    directory: Path, message_gap_seconds: float = DEFAULT_MESSAGE_GAP_SECONDS
) -> BeamConversation:
    chat_file = _chat_file(directory)
    if chat_file is None:
        raise ValueError(f"{directory}: no chat.json with {QUESTIONS_FILE} beside it")
    name = f"{directory.parent.name}/{directory.name}"
    messages = read_messages(orjson.loads(chat_file.read_bytes()), message_gap_seconds)
    raw_questions = orjson.loads((directory / QUESTIONS_FILE).read_bytes())
    if not isinstance(raw_questions, dict):
        raise ValueError(f"{directory / QUESTIONS_FILE}: expected an object of abilities")
    conversation = BeamConversation(name, messages, [])
    known = {message.id for message in messages}
    for ability, questions in raw_questions.items():
        for raw in questions or []:
            question = _question(str(ability), raw, known, conversation)
            if question is not None:
                conversation.questions.append(question)
    return conversation


def read_messages(batches: Any, message_gap_seconds: float) -> list[BeamMessage]:
    """Every message of the chat, in order, dated (see the module docstring)."""
    if not isinstance(batches, list):
        raise ValueError("a BEAM chat is a JSON list of sessions")
    gap = timedelta(seconds=message_gap_seconds)
    messages: list[BeamMessage] = []
    last: datetime | None = None
    for batch in batches:
        session = [m for turn in batch.get("turns") or [] for m in turn]
        if not session:
            continue
        at = _session_start(session[0].get("time_anchor"), last)
        for raw in session:
            text = str(raw.get("content") or "")
            if raw.get("role") == "user":
                text = _MARKER.sub("", text)
            messages.append(BeamMessage(int(raw["id"]), str(raw.get("role")), text, at))
            last = at
            at += gap
    return messages


def _session_start(anchor: Any, last: datetime | None) -> datetime:
    after_last = UNDATED_START if last is None else last + UNDATED_SESSION_GAP
    if not isinstance(anchor, str) or not anchor.strip():
        return after_last
    try:
        day = datetime.strptime(anchor.strip(), "%B-%d-%Y")
    except ValueError:
        return after_last
    start = day.replace(hour=SESSION_START_HOUR, tzinfo=UTC)
    # Times only move forward, whatever a date says.
    return start if last is None or start > last else last + timedelta(seconds=1)


def _ids(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for part in value.values():
            yield from _ids(part)
    elif isinstance(value, list):
        for part in value:
            yield from _ids(part)
    elif value is not None:
        yield value


def _known_ids(value: Any, known: set[int], conversation: BeamConversation) -> tuple[int, ...]:
    found: list[int] = []
    for raw in _ids(value):
        if isinstance(raw, int) and not isinstance(raw, bool) and raw in known:
            found.append(raw)
        else:
            conversation.skipped_evidence += 1
    return tuple(dict.fromkeys(found))


def _question(
    ability: str, raw: Any, known: set[int], conversation: BeamConversation
) -> BeamQuestion | None:
    if not isinstance(raw, dict) or not str(raw.get("question") or "").strip():
        return None
    source = raw.get("source_chat_ids")
    evidence = _known_ids(source, known, conversation)
    if not evidence:
        conversation.without_evidence += 1
        return None
    older: tuple[int, ...] = ()
    newer: tuple[int, ...] = ()
    if ability == KNOWLEDGE_UPDATE:
        if isinstance(source, dict) and "updated_info" in source:
            quiet = BeamConversation("", [], [])  # already counted above
            older = _known_ids(source.get("original_info"), known, quiet)
            newer = _known_ids(source.get("updated_info"), known, quiet)
        elif len(evidence) > 1:
            newest = max(evidence)
            older, newer = tuple(i for i in evidence if i != newest), (newest,)
    return BeamQuestion(ability, str(raw["question"]).strip(), evidence, older, newer)


def telegram_export(conversation: BeamConversation, *, with_bot: bool = True) -> dict[str, Any]:
    """The conversation as Telegram Desktop's `result.json` of a chat with a bot (the
    assistant's id is the chat's own, as Telegram Desktop writes it), or with `with_bot`
    false of a private chat between two people."""
    return {
        "name": ASSISTANT_NAME if with_bot else f"BEAM {conversation.name}",
        "type": "bot_chat" if with_bot else "personal_chat",
        "id": int(_AUTHOR_IDS[ASSISTANT_NAME].removeprefix("user")) if with_bot else 1,
        "messages": [
            {
                "id": part * PART_ID_STRIDE + message.id + 1,
                "type": "message",
                "date": message.at.strftime("%Y-%m-%dT%H:%M:%S"),
                "date_unixtime": str(int(message.at.timestamp())),
                "from": message.author,
                "from_id": _AUTHOR_IDS[message.author],
                "text": text,
                "text_entities": [{"type": "plain", "text": text}],
            }
            for message in conversation.messages
            for part, text in enumerate(message_parts(message.text))
        ],
    }


def message_parts(text: str, limit: int = MAX_TEXT_CHARS) -> list[str]:
    """`text` as the messages a client would send it in: within `limit` characters each,
    cut at the last paragraph, line or word break before it (else at the limit)."""
    parts = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind("\n\n"), window.rfind("\n"), window.rfind(" "))
        cut = cut if cut > limit // 2 else limit
        parts.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return [*parts, text]


def write_telegram_export(
    conversation: BeamConversation, path: Path, *, with_bot: bool = True
) -> Path:
    path.write_bytes(orjson.dumps(telegram_export(conversation, with_bot=with_bot)))
    return path
