"""A fake Telegram Bot API server on 127.0.0.1 for mnemobot's tests.

The real python-telegram-bot client talks to it over real HTTP
(``ApplicationBuilder().token(TOKEN).base_url(server.base_url)``), so the tests exercise PTB's
request encoding, error mapping and polling loop exactly as production does. Stdlib only: a
``ThreadingHTTPServer`` in a daemon thread serves sync tests, async tests and a bot running as a
subprocess alike.

Usage::

    with TelegramServer() as server:
        app = ApplicationBuilder().token(server.token).base_url(server.base_url).build()
        ...
        server.send_text("hello", chat_id=42, user_id=42)
        [reply] = server.wait_for_messages(42, 1)

Groups (``telegram_groups``): ``set_member_status`` decides what getChatMember
answers, ``upgrade_group`` turns a group into a supergroup the way Telegram does (service
messages in both chats, the old id refused with ``migrate_to_chat_id``), ``send_as_chat``
writes as an anonymous administrator or as a channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import email.parser
import email.policy
import itertools
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from mnemobot_tooling.fakes.telegram_groups import (
    CHANNEL_BOT,
    GROUP_ANONYMOUS_BOT,
    MIGRATED_DESCRIPTION,
    GroupState,
    sent_as_chat,
)

JsonDict = dict[str, Any]

DEFAULT_TOKEN = "123456:TEST-TOKEN"
DEFAULT_BOT_USERNAME = "mnemo_test_bot"
MAX_MESSAGE_UTF16_UNITS = 4096
MAX_CAPTION_UTF16_UNITS = 1024

# Texts of the real Bot API, so code that matches on them behaves as in production.
CONFLICT_OTHER_POLLER = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
CONFLICT_WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
MESSAGE_TOO_LONG = "Bad Request: message is too long"
MESSAGE_TEXT_EMPTY = "Bad Request: message text is empty"
CANT_PARSE_ENTITIES = "Bad Request: can't parse entities: "
METHOD_NOT_FOUND = "Not Found: method not found"
MESSAGE_NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)

CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)

# Telegram leaves these out unless allowed_updates names them explicitly.
_OPT_IN_UPDATE_TYPES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})

# Form fields are strings on the wire; these stay strings even when they look like JSON
# (a user's text "123" or "true" must not turn into a number or a bool).
_STRING_PARAMS = frozenset(
    {
        "text",
        "caption",
        "parse_mode",
        "action",
        "url",
        "secret_token",
        "ip_address",
        "language_code",
        "business_connection_id",
        "inline_message_id",
        "file_id",
        "description",
        "short_description",
        "name",
        "emoji",
        "title",
        "query",
        "callback_query_id",
    }
)

_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit Telegram counts limits and entity offsets in."""
    return len(text.encode("utf-16-le")) // 2


# --------------------------------------------------------------------------------------------
# HTML parse mode
# --------------------------------------------------------------------------------------------

SUPPORTED_HTML_TAGS = frozenset(
    {
        "a",
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "code",
        "pre",
        "blockquote",
        "tg-emoji",
    }
)
_ENTITY_TYPE_OF_TAG = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "span": "spoiler",
    "tg-spoiler": "spoiler",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "a": "text_link",
    "tg-emoji": "custom_emoji",
}
_NAMED_CHAR_REFS = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_CHAR_REF = re.compile(r"&(?:(lt|gt|amp|quot)|#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6}));")


class HtmlParseError(ValueError):
    """Telegram would answer "can't parse entities" for this HTML; the message is its reason."""


@dataclass(frozen=True)
class ParsedText:
    """Visible text of a message and its entities (offsets in UTF-16 units)."""

    text: str
    entities: list[JsonDict]


@dataclass
class _OpenTag:
    name: str
    start: int
    attributes: dict[str, str]
    byte_offset: int
    language: str | None = None


def parse_telegram_html(source: str) -> ParsedText:
    """Parse Telegram's HTML parse mode like the Bot API does, or raise HtmlParseError.

    Follows the rules of the Bot API documentation: only the supported tags, properly nested,
    and every ``<`` or ``&`` that is not markup written as an entity (``&lt; &gt; &amp; &quot;``
    or a numeric one). Telegram itself lets a stray ``&`` through; being stricter here catches
    unescaped user text before it reaches a real chat as a garbled message.
    """
    out: list[str] = []
    units = 0
    stack: list[_OpenTag] = []
    entities: list[JsonDict] = []
    length = len(source)

    def byte_offset(position: int) -> int:
        return len(source[:position].encode("utf-8"))

    i = 0
    while i < length:
        char = source[i]
        if char == "&":
            match = _CHAR_REF.match(source, i)
            if match is None:
                raise HtmlParseError(
                    f'Unescaped "&" at byte offset {byte_offset(i)}: write it as "&amp;"'
                )
            decoded = _decode_char_ref(match, byte_offset(i))
            out.append(decoded)
            units += utf16_len(decoded)
            i = match.end()
            continue
        if char != "<":
            out.append(char)
            units += 2 if ord(char) > 0xFFFF else 1
            i += 1
            continue

        begin = i
        if i + 1 < length and source[i + 1] == "/":
            if not stack:
                raise HtmlParseError(f"Unexpected end tag at byte offset {byte_offset(begin)}")
            j = i + 2
            while j < length and not source[j].isspace() and source[j] != ">":
                j += 1
            end_name = source[i + 2 : j].lower()
            while j < length and source[j].isspace():
                j += 1
            if j >= length or source[j] != ">":
                raise HtmlParseError(f"Unclosed end tag at byte offset {byte_offset(begin)}")
            expected = stack[-1].name
            if end_name and end_name != expected:
                raise HtmlParseError(
                    f"Unmatched end tag at byte offset {byte_offset(begin)}, "
                    f'expected "</{expected}>", found "</{end_name}>"'
                )
            _close_tag(stack.pop(), units, stack, entities)
            i = j + 1
            continue

        j = i + 1
        while j < length and not source[j].isspace() and source[j] != ">":
            j += 1
        if j >= length:
            raise HtmlParseError(f"Unclosed start tag at byte offset {byte_offset(begin)}")
        name = source[i + 1 : j].lower()
        if name not in SUPPORTED_HTML_TAGS:
            raise HtmlParseError(
                f'Unsupported start tag "{name}" at byte offset {byte_offset(begin)}'
            )
        attributes, j = _parse_attributes(source, j, name, byte_offset(begin))
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise HtmlParseError(
                f'Tag "span" must have class "tg-spoiler" at byte offset {byte_offset(begin)}'
            )
        if name == "tg-emoji" and not attributes.get("emoji-id"):
            raise HtmlParseError(
                f'Tag "tg-emoji" must have attribute "emoji-id" at byte offset {byte_offset(begin)}'
            )
        stack.append(_OpenTag(name, units, attributes, byte_offset(begin)))
        i = j + 1

    if stack:
        raise HtmlParseError(f'Can\'t find end tag corresponding to start tag "{stack[-1].name}"')
    entities.sort(key=lambda entity: (entity["offset"], -entity["length"]))
    return ParsedText("".join(out), entities)


def _decode_char_ref(match: re.Match[str], at_byte: int) -> str:
    named, decimal, hexadecimal = match.groups()
    if named:
        return _NAMED_CHAR_REFS[named]
    code_point = int(decimal) if decimal else int(hexadecimal, 16)
    if code_point == 0 or code_point > 0x10FFFF or 0xD800 <= code_point <= 0xDFFF:
        raise HtmlParseError(f"Invalid character reference at byte offset {at_byte}")
    return chr(code_point)


def _parse_attributes(
    source: str, position: int, tag: str, tag_byte_offset: int
) -> tuple[dict[str, str], int]:
    """Read ``name="value"`` pairs up to the closing ``>``; return them and the ``>`` index."""
    attributes: dict[str, str] = {}
    length = len(source)
    j = position

    def unclosed() -> HtmlParseError:
        return HtmlParseError(f"Unclosed start tag at byte offset {tag_byte_offset}")

    while True:
        while j < length and source[j].isspace():
            j += 1
        if j >= length:
            raise unclosed()
        if source[j] == ">":
            return attributes, j
        start = j
        while j < length and not source[j].isspace() and source[j] not in "=>":
            j += 1
        attribute = source[start:j].lower()
        if not attribute:
            raise HtmlParseError(
                f'Empty attribute name in the tag "{tag}" at byte offset {tag_byte_offset}'
            )
        while j < length and source[j].isspace():
            j += 1
        if j >= length:
            raise unclosed()
        if source[j] != "=":
            attributes[attribute] = ""
            continue
        j += 1
        while j < length and source[j].isspace():
            j += 1
        if j >= length:
            raise unclosed()
        if source[j] in "\"'":
            quote = source[j]
            end = source.find(quote, j + 1)
            if end < 0:
                raise unclosed()
            raw_value = source[j + 1 : end]
            j = end + 1
        else:
            start = j
            while j < length and not source[j].isspace() and source[j] != ">":
                j += 1
            raw_value = source[start:j]
        attributes[attribute] = _CHAR_REF.sub(
            lambda match: _decode_char_ref(match, tag_byte_offset), raw_value
        )


def _close_tag(tag: _OpenTag, end: int, stack: list[_OpenTag], entities: list[JsonDict]) -> None:
    css_class = tag.attributes.get("class", "")
    # <pre><code class="language-x"> is how Telegram spells a pre block with a language.
    if (
        tag.name == "code"
        and stack
        and stack[-1].name == "pre"
        and css_class.startswith("language-")
    ):
        stack[-1].language = css_class.removeprefix("language-")
        return
    if end <= tag.start:
        return
    entity: JsonDict = {"type": _ENTITY_TYPE_OF_TAG[tag.name], "offset": tag.start}
    entity["length"] = end - tag.start
    if tag.name == "a":
        href = tag.attributes.get("href", "")
        if not href:
            return
        user_link = re.fullmatch(r"tg://user\?id=(\d+)", href)
        if user_link:
            entity["type"] = "text_mention"
            entity["user"] = {"id": int(user_link.group(1)), "is_bot": False, "first_name": ""}
        else:
            entity["url"] = href
    elif tag.name == "pre" and tag.language:
        entity["language"] = tag.language
    elif tag.name == "blockquote" and "expandable" in tag.attributes:
        entity["type"] = "expandable_blockquote"
    elif tag.name == "tg-emoji":
        entity["custom_emoji_id"] = tag.attributes["emoji-id"]
    entities.append(entity)


_BOT_COMMAND = re.compile(r"(?<![\w/@])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w/@])")
_MENTION = re.compile(r"(?<![\w@/])@[A-Za-z0-9_]{5,32}(?![\w@])")


def detect_entities(text: str) -> list[JsonDict]:
    """The ``bot_command`` and ``mention`` entities Telegram marks in a plain incoming text."""
    entities: list[JsonDict] = []
    taken: list[range] = []
    for kind, pattern in (("bot_command", _BOT_COMMAND), ("mention", _MENTION)):
        for match in pattern.finditer(text):
            if any(match.start() in span for span in taken):
                continue
            taken.append(range(match.start(), match.end()))
            entities.append(
                {
                    "type": kind,
                    "offset": utf16_len(text[: match.start()]),
                    "length": utf16_len(match.group(0)),
                }
            )
    entities.sort(key=lambda entity: entity["offset"])
    return entities


# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------


class BotApiError(Exception):
    """An error answer of the Bot API: HTTP status == error_code."""

    def __init__(
        self,
        status: int,
        description: str,
        retry_after: int | None = None,
        *,
        migrate_to_chat_id: int | None = None,
    ) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.retry_after = retry_after
        self.migrate_to_chat_id = migrate_to_chat_id

    def payload(self) -> JsonDict:
        body: JsonDict = {"ok": False, "error_code": self.status, "description": self.description}
        parameters: JsonDict = {}
        if self.retry_after is not None:
            parameters["retry_after"] = self.retry_after
        if self.migrate_to_chat_id is not None:
            parameters["migrate_to_chat_id"] = self.migrate_to_chat_id
        if parameters:
            body["parameters"] = parameters
        return body


class _DropConnection(Exception):
    """Close the socket without an answer (a simulated outage)."""


@dataclass(frozen=True)
class UploadedFile:
    """A file part of a multipart request."""

    filename: str | None
    content_type: str
    data: bytes = field(repr=False)


@dataclass
class _StoredFile:
    file_id: str
    file_unique_id: str
    file_path: str
    data: bytes


def _default_error_description(status: int, retry_after: int | None) -> str:
    if status == 429:
        return f"Too Many Requests: retry after {retry_after or 1}"
    if status == 400:
        return "Bad Request"
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"Error {status}"


class TelegramServer:
    """Fake Telegram Bot API; see the module docstring. Thread-safe.

    Why so many methods: it is a test's one handle on Telegram's side, over one shared
    state (chats, messages, calls): what a user does (`send_text`, `send_photo`,
    `press_button`, `upgrade_group`...), what a test reads back (`sent_messages`, `calls`,
    `wait_for_messages`...) and the faults it injects (`fail_next`, `set_unreachable`...),
    in that order below. Split across objects, every test would hold three handles on the
    same state and lock.
    """

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        *,
        bot_id: int | None = None,
        username: str = DEFAULT_BOT_USERNAME,
        first_name: str = "Mnemo Test Bot",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.token = token
        if bot_id is None:
            # Telegram's token starts with the bot's user id.
            token_prefix = token.split(":", 1)[0]
            bot_id = int(token_prefix) if token_prefix.isdigit() else 100000
        self.bot_user: JsonDict = {
            "id": bot_id,
            "is_bot": True,
            "first_name": first_name,
            "username": username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }
        self._host = host
        self._port = port
        self._cond = threading.Condition()
        self._httpd: _FakeHttpServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._connections: set[socket.socket] = set()

        self._updates: list[JsonDict] = []
        self._next_update_id = 1
        self._allowed_updates: frozenset[str] | None = None
        self._poll_generation = 0
        self._webhook: JsonDict | None = None

        self._chats: dict[int, JsonDict] = {}
        self._messages: dict[int, dict[int, JsonDict]] = {}
        self._last_message_id: dict[int, int] = {}
        self._sent: list[JsonDict] = []
        self._documents: list[JsonDict] = []
        self._drafts: list[JsonDict] = []
        self._actions: list[tuple[int | str, str]] = []
        self._calls: list[JsonDict] = []
        self._commands: dict[tuple[str, str], list[JsonDict]] = {}
        self._files: dict[str, _StoredFile] = {}
        self._file_counter = itertools.count(1)
        self._groups = GroupState()

        self._failures: dict[str, deque[BotApiError]] = {}
        self._holds: dict[str, threading.Event] = {}
        self._html_rejector: Callable[[str], bool] | None = None
        self._unreachable = False
        self._unreachable_status: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> TelegramServer:
        """Bind and serve in a daemon thread. A restart after stop() reuses the same port."""
        if self._httpd is not None:
            return self
        self._stopping = False
        self._httpd = _FakeHttpServer((self._host, self._port), self)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-telegram:{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; long polls in flight are woken and their connections closed."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        httpd.shutdown()
        with self._cond:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> TelegramServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("TelegramServer is not started")
        return self._port

    @property
    def url(self) -> str:
        """Server root, e.g. ``http://127.0.0.1:PORT``."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """For ``ApplicationBuilder().base_url()`` / ``TELEGRAM_API_BASE_URL`` (token appended)."""
        return f"{self.url}/bot"

    @property
    def base_file_url(self) -> str:
        """For ``ApplicationBuilder().base_file_url()``: downloads of files from getFile."""
        return f"{self.url}/file/bot"

    # -- injecting updates -------------------------------------------------------------------

    def push_update(self, update: JsonDict) -> int:
        """Queue an update for getUpdates; assigns ``update_id`` when missing. Returns the id."""
        update = copy.deepcopy(update)
        with self._cond:
            self._assign_update_id(update)
            for key in ("message", "edited_message", "channel_post", "business_message"):
                if isinstance(update.get(key), dict):
                    self._remember_message(update[key])
            self._updates.append(update)
            self._cond.notify_all()
            return int(update["update_id"])

    def build_update(
        self,
        text: str,
        *,
        chat_id: int,
        user_id: int | None = None,
        chat_type: str = "private",
        username: str | None = None,
        first_name: str = "Test",
        thread_id: int | None = None,
        reply_to_bot: bool = False,
        entities: list[JsonDict] | None = None,
        caption: bool = False,
    ) -> JsonDict:
        """Like send_text() but not queued: for webhook tests that POST the update themselves.

        The update gets a fresh update_id and its message a fresh per-chat message_id.
        """
        content = self._text_content(text, entities, caption)
        return self._incoming(
            content,
            chat_id=chat_id,
            user_id=user_id,
            chat_type=chat_type,
            username=username,
            first_name=first_name,
            thread_id=thread_id,
            reply_to_bot=reply_to_bot,
            push=False,
        )

    def send_text(
        self,
        text: str,
        *,
        chat_id: int,
        user_id: int | None = None,
        chat_type: str = "private",
        username: str | None = None,
        first_name: str = "Test",
        thread_id: int | None = None,
        reply_to_bot: bool = False,
        entities: list[JsonDict] | None = None,
        caption: bool = False,
        language_code: str = "en",
    ) -> JsonDict:
        """A user writes ``text``; returns the queued update.

        ``bot_command`` and ``mention`` entities are added like Telegram does; ``entities`` are
        merged in. ``caption=True`` sends the text as the caption of a photo instead.
        ``user_id`` defaults to ``chat_id`` in private chats; ``language_code`` is the
        language the user's Telegram app is set to.
        """
        content = self._text_content(text, entities, caption)
        return self._incoming(
            content,
            chat_id=chat_id,
            user_id=user_id,
            chat_type=chat_type,
            username=username,
            first_name=first_name,
            thread_id=thread_id,
            reply_to_bot=reply_to_bot,
            push=True,
            language_code=language_code,
        )

    def send_as_chat(
        self,
        text: str,
        *,
        chat_id: int,
        channel_id: int | None = None,
        channel_title: str = "Test Channel",
        signature: str | None = None,
        chat_type: str = "supergroup",
    ) -> JsonDict:
        """``text`` sent in the group ``chat_id`` on behalf of a chat: by an anonymous
        administrator (as the group itself), or with ``channel_id`` as that channel (a
        linked channel's admin, or a user writing as their channel); ``signature``: the
        administrator's custom title shown with it."""
        anonymous = GROUP_ANONYMOUS_BOT if channel_id is None else CHANNEL_BOT
        return self._incoming(
            self._text_content(text, None, False),
            chat_id=chat_id,
            user_id=int(anonymous["id"]),
            chat_type=chat_type,
            username=None,
            first_name="Test",
            thread_id=None,
            reply_to_bot=False,
            push=True,
            sender=lambda chat: sent_as_chat(chat, channel_id, channel_title, signature),
        )

    def send_photo(
        self,
        *,
        chat_id: int,
        user_id: int | None = None,
        caption: str | None = None,
        content: bytes = b"\x89PNG\r\n\x1a\nfake-photo",
        chat_type: str = "private",
        username: str | None = None,
        first_name: str = "Test",
        thread_id: int | None = None,
        reply_to_bot: bool = False,
        push: bool = True,
        extra: JsonDict | None = None,
        language_code: str = "en",
    ) -> JsonDict:
        """A user sends a photo (two sizes, downloadable via getFile) with an optional caption."""
        sizes = []
        for width, height in ((90, 68), (1280, 960)):
            stored = self._store_file("photos", "jpg", content)
            sizes.append(
                {
                    "file_id": stored.file_id,
                    "file_unique_id": stored.file_unique_id,
                    "width": width,
                    "height": height,
                    "file_size": len(content),
                }
            )
        message_content: JsonDict = {"photo": sizes}
        self._add_caption(message_content, caption)
        message_content.update(extra or {})
        return self._incoming(
            message_content,
            chat_id=chat_id,
            user_id=user_id,
            chat_type=chat_type,
            username=username,
            first_name=first_name,
            thread_id=thread_id,
            reply_to_bot=reply_to_bot,
            push=push,
            language_code=language_code,
        )

    def send_voice(
        self,
        *,
        chat_id: int,
        user_id: int | None = None,
        duration: int = 2,
        content: bytes = b"OggS\x00fake-voice",
        caption: str | None = None,
        chat_type: str = "private",
        username: str | None = None,
        first_name: str = "Test",
        thread_id: int | None = None,
        reply_to_bot: bool = False,
        push: bool = True,
        extra: JsonDict | None = None,
        language_code: str = "en",
    ) -> JsonDict:
        """A user sends a voice note (audio/ogg, downloadable via getFile)."""
        stored = self._store_file("voice", "oga", content)
        message_content: JsonDict = {
            "voice": {
                "file_id": stored.file_id,
                "file_unique_id": stored.file_unique_id,
                "duration": duration,
                "mime_type": "audio/ogg",
                "file_size": len(content),
            }
        }
        self._add_caption(message_content, caption)
        message_content.update(extra or {})
        return self._incoming(
            message_content,
            chat_id=chat_id,
            user_id=user_id,
            chat_type=chat_type,
            username=username,
            first_name=first_name,
            thread_id=thread_id,
            reply_to_bot=reply_to_bot,
            push=push,
            language_code=language_code,
        )

    def send_content(
        self,
        content: JsonDict,
        *,
        chat_id: int,
        user_id: int | None = None,
        chat_type: str = "private",
        first_name: str = "Test",
        push: bool = True,
    ) -> JsonDict:
        """A user sends a message of any other kind: ``content`` holds its fields as the
        Bot API names them (``location``, ``poll``, ``audio``...; ``forward_origin``,
        ``media_group_id``). Files in it come from :meth:`store_file`."""
        return self._incoming(
            content,
            chat_id=chat_id,
            user_id=user_id,
            chat_type=chat_type,
            username=None,
            first_name=first_name,
            thread_id=None,
            reply_to_bot=False,
            push=push,
        )

    def send_forward(
        self,
        text: str,
        *,
        chat_id: int,
        author: str,
        date: int,
        author_id: int = 777,
        user_id: int | None = None,
    ) -> JsonDict:
        """A user forwards ``text`` that ``author`` (a user) wrote at ``date`` (epoch)."""
        origin = forward_origin_user(author, date, author_id)
        return self.send_content(
            {"text": text, "forward_origin": origin}, chat_id=chat_id, user_id=user_id
        )

    def store_file(self, folder: str, extension: str, data: bytes) -> JsonDict:
        """Keep ``data`` for getFile and download; returns the Bot API file fields."""
        stored = self._store_file(folder, extension, data)
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": len(data),
        }

    def edit_message(self, update: JsonDict, text: str) -> JsonDict:
        """The user edits the text of the message of ``update`` (an ``edited_message``): the
        caption of a photo, voice note or file (a caption may be added so, too)."""
        message = copy.deepcopy(update["message"])
        field = "text" if "text" in message else "caption"
        message[field] = text
        message.pop("entities" if field == "text" else "caption_entities", None)
        message["edit_date"] = int(time.time())
        edited: JsonDict = {"update_id": None, "edited_message": message}
        self.push_update(edited)
        return edited

    def send_sticker(
        self,
        *,
        chat_id: int,
        user_id: int | None = None,
        emoji: str = "👍",
        content: bytes = b"RIFF\x00\x00\x00\x00WEBPfake-sticker",
        chat_type: str = "private",
        username: str | None = None,
        first_name: str = "Test",
        thread_id: int | None = None,
        reply_to_bot: bool = False,
        push: bool = True,
    ) -> JsonDict:
        """A user sends a (static, regular) sticker; stickers carry no caption."""
        stored = self._store_file("stickers", "webp", content)
        message_content: JsonDict = {
            "sticker": {
                "file_id": stored.file_id,
                "file_unique_id": stored.file_unique_id,
                "type": "regular",
                "width": 512,
                "height": 512,
                "is_animated": False,
                "is_video": False,
                "emoji": emoji,
                "file_size": len(content),
            }
        }
        return self._incoming(
            message_content,
            chat_id=chat_id,
            user_id=user_id,
            chat_type=chat_type,
            username=username,
            first_name=first_name,
            thread_id=thread_id,
            reply_to_bot=reply_to_bot,
            push=push,
        )

    def send_document(
        self,
        *,
        chat_id: int,
        user_id: int | None = None,
        file_name: str = "notes.txt",
        mime_type: str = "text/plain",
        content: bytes = b"hello from a document\n",
        caption: str | None = None,
        chat_type: str = "private",
        username: str | None = None,
        first_name: str = "Test",
        thread_id: int | None = None,
        reply_to_bot: bool = False,
        push: bool = True,
        extra: JsonDict | None = None,
        language_code: str = "en",
    ) -> JsonDict:
        """A user sends a document (downloadable via getFile) with an optional caption."""
        extension = file_name.rsplit(".", 1)[-1] if "." in file_name else "bin"
        stored = self._store_file("documents", extension, content)
        message_content: JsonDict = {
            "document": {
                "file_id": stored.file_id,
                "file_unique_id": stored.file_unique_id,
                "file_name": file_name,
                "mime_type": mime_type,
                "file_size": len(content),
            }
        }
        self._add_caption(message_content, caption)
        message_content.update(extra or {})
        return self._incoming(
            message_content,
            chat_id=chat_id,
            user_id=user_id,
            chat_type=chat_type,
            username=username,
            first_name=first_name,
            thread_id=thread_id,
            reply_to_bot=reply_to_bot,
            push=push,
            language_code=language_code,
        )

    def press_button(
        self,
        chat_id: int,
        message_id: int,
        callback_data: str,
        *,
        user_id: int,
        first_name: str = "Test",
        language_code: str = "en",
    ) -> JsonDict:
        """A user presses an inline button of a bot message; returns the queued update.

        The update carries the message as it is now (Telegram sends the pressed message
        along) and a fresh ``callback_query`` id; answer it with answerCallbackQuery.
        ``language_code`` is the language the presser's Telegram app is set to.
        """
        with self._cond:
            message = self._messages.get(chat_id, {}).get(message_id)
            if message is None:
                raise ValueError(f"no message {message_id} in chat {chat_id}")
            query: JsonDict = {
                "id": str(next(self._file_counter) + 10_000),
                "from": {
                    "id": user_id,
                    "is_bot": False,
                    "first_name": first_name,
                    "language_code": language_code,
                },
                "message": copy.deepcopy(message),
                "chat_instance": str(chat_id),
                "data": callback_data,
            }
            update: JsonDict = {"update_id": None, "callback_query": query}
            self._assign_update_id(update)
            self._updates.append(copy.deepcopy(update))
            self._cond.notify_all()
            return update

    def _api_answer_callback_query(self, params: JsonDict) -> bool:
        if not params.get("callback_query_id"):
            raise BotApiError(400, "Bad Request: query id is empty")
        return True

    def set_member_status(self, chat_id: int, user_id: int, status: str) -> None:
        """What getChatMember answers for ``user_id`` in ``chat_id`` from now on: ``creator``,
        ``administrator``, ``member``, ``restricted``, ``left`` or ``kicked``. A user who
        wrote in a group is a ``member``; one never seen there is ``left``."""
        with self._cond:
            self._groups.set_status(chat_id, user_id, status)

    def upgrade_group(self, old_chat_id: int, new_chat_id: int, *, user_id: int) -> None:
        """``user_id`` turns group ``old_chat_id`` into supergroup ``new_chat_id``.

        Like Telegram: a service message with ``migrate_to_chat_id`` in the old group and one
        with ``migrate_from_chat_id`` in the new supergroup are queued, members keep their
        roles, and from now on a request naming the old id fails with 400 and
        ``parameters.migrate_to_chat_id``.
        """
        user: JsonDict = {"id": user_id, "is_bot": False, "first_name": "Test"}
        with self._cond:
            old_chat = dict(self._chats.get(old_chat_id) or self._resolve_chat(old_chat_id))
            new_chat: JsonDict = {
                "id": new_chat_id,
                "type": "supergroup",
                "title": old_chat.get("title", "Test Supergroup"),
            }
            self._chats[new_chat_id] = new_chat
            for chat, field_name, other in (
                (old_chat, "migrate_to_chat_id", new_chat_id),
                (new_chat, "migrate_from_chat_id", old_chat_id),
            ):
                message: JsonDict = {
                    "message_id": self._next_message_id(chat["id"]),
                    "from": user,
                    "chat": dict(chat),
                    "date": int(time.time()),
                    field_name: other,
                }
                self._remember_message(message)
                update: JsonDict = {"update_id": None, "message": message}
                self._assign_update_id(update)
                self._updates.append(copy.deepcopy(update))
            self._groups.migrate(old_chat_id, new_chat_id)
            self._cond.notify_all()

    def pending_updates(self) -> list[JsonDict]:
        """Updates queued and not yet confirmed by a getUpdates offset."""
        with self._cond:
            return copy.deepcopy(self._updates)

    # -- observing ---------------------------------------------------------------------------

    def sent_messages(self, chat_id: int | str | None = None) -> list[JsonDict]:
        """Messages the bot sent, oldest first.

        Each record: ``chat_id, message_id, text`` (as sent, e.g. HTML source),
        ``plain_text`` (as shown), ``parse_mode, entities, message_thread_id,
        reply_to_message_id, reply_markup, disable_notification, link_preview_options,
        params`` (the whole request), ``message`` (the Message returned), ``edit_count,
        deleted``.
        """
        with self._cond:
            return [
                copy.deepcopy(record)
                for record in self._sent
                if chat_id is None or record["chat_id"] == chat_id
            ]

    def chat_actions(self, chat_id: int | str | None = None) -> list[str]:
        """Actions sent with sendChatAction (``"typing"``...), oldest first."""
        with self._cond:
            return [action for chat, action in self._actions if chat_id in (None, chat)]

    def calls(self, method: str | None = None) -> list[JsonDict]:
        """Every request: ``method, params`` (decoded), ``time`` (epoch), ``token_valid``,
        ``status`` (HTTP status answered; None while a long poll is in flight; 0 when the
        connection was dropped by set_unreachable())."""
        with self._cond:
            return [
                copy.deepcopy(call)
                for call in self._calls
                if method is None or call["method"].lower() == method.lower()
            ]

    @property
    def commands(self) -> list[JsonDict]:
        """Commands of the last setMyCommands for the default scope and no language."""
        return self.commands_for()

    def commands_for(
        self, scope: JsonDict | None = None, language_code: str = ""
    ) -> list[JsonDict]:
        with self._cond:
            return copy.deepcopy(self._commands.get(_commands_key(scope, language_code), []))

    @property
    def webhook(self) -> JsonDict | None:
        """The webhook set with setWebhook (url, secret_token, allowed_updates...), or None."""
        with self._cond:
            return copy.deepcopy(self._webhook)

    def wait_for_messages(
        self, chat_id: int | str, n: int = 1, timeout: float = 5.0
    ) -> list[JsonDict]:
        """Block until the bot has sent at least ``n`` messages to ``chat_id``; return them all.

        Raises AssertionError listing what did arrive when ``timeout`` passes first.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                records = [record for record in self._sent if record["chat_id"] == chat_id]
                if len(records) >= n:
                    return copy.deepcopy(records)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    texts = [record["text"] for record in records]
                    raise AssertionError(
                        f"expected {n} message(s) to chat {chat_id} within {timeout}s, "
                        f"got {len(records)}: {texts!r}; calls: "
                        f"{[call['method'] for call in self._calls]!r}"
                    )
                self._cond.wait(remaining)

    def wait_for_call(self, method: str, timeout: float = 5.0, *, count: int = 1) -> JsonDict:
        """Block until ``method`` has been called ``count`` times; return the latest such call."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                matching = [
                    call for call in self._calls if call["method"].lower() == method.lower()
                ]
                if len(matching) >= count:
                    return copy.deepcopy(matching[-1])
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"expected {count} call(s) of {method} within {timeout}s, got "
                        f"{len(matching)}; calls: {[call['method'] for call in self._calls]!r}"
                    )
                self._cond.wait(remaining)

    async def wait_for_messages_async(
        self, chat_id: int | str, n: int = 1, timeout: float = 5.0
    ) -> list[JsonDict]:
        """wait_for_messages() without blocking the event loop (a bot may run on that loop)."""
        return await asyncio.to_thread(self.wait_for_messages, chat_id, n, timeout)

    async def wait_for_call_async(
        self, method: str, timeout: float = 5.0, *, count: int = 1
    ) -> JsonDict:
        """wait_for_call() without blocking the event loop."""
        return await asyncio.to_thread(self.wait_for_call, method, timeout, count=count)

    # -- fault injection ---------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        *,
        status: int,
        description: str | None = None,
        retry_after: int | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` calls of ``method`` (``"*"`` = any) get this Bot API error.

        ``description`` defaults to Telegram's text for the status, e.g.
        ``"Too Many Requests: retry after N"`` for 429.
        """
        error = BotApiError(
            status, description or _default_error_description(status, retry_after), retry_after
        )
        with self._cond:
            self._failures.setdefault(method.lower(), deque()).extend([error] * times)

    def hold(self, method: str, release: threading.Event) -> None:
        """Calls of ``method`` are answered only once ``release`` is set (at most 30 s
        later): a slow Telegram, for what the bot does meanwhile."""
        with self._cond:
            self._holds[method.lower()] = release

    def reject_html_when(self, predicate: Callable[[str], bool] | None) -> None:
        """HTML sendMessage/editMessageText whose text matches gets "can't parse entities".

        ``None`` removes the predicate.
        """
        with self._cond:
            self._html_rejector = predicate

    def set_unreachable(self, unreachable: bool = True, *, status: int | None = None) -> None:
        """Simulate an outage: every request is dropped without an answer (``status=None``) or
        answered with ``status`` (e.g. 502). Long polls in flight are cut as well."""
        with self._cond:
            self._unreachable = unreachable
            self._unreachable_status = status
            self._cond.notify_all()

    # -- HTTP plumbing (called from handler threads) -----------------------------------------

    def _track_connection(self, connection: socket.socket, add: bool) -> None:
        with self._cond:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _serve(self, handler: _BotApiRequestHandler) -> None:
        try:
            body = handler.read_body()
        except (OSError, ValueError):
            handler.close_connection = True
            return
        if self._stopping:
            # Answering would let a polling client spin until its connection is cut.
            handler.drop()
            return
        parts = urlsplit(handler.path)
        path = unquote(parts.path)
        token_and_method = re.fullmatch(r"/bot([^/]*)/([^/]+)/?", path)
        if token_and_method:
            token, method = token_and_method.groups()
            self._serve_method(handler, token, method, parts.query, body)
            return
        if self._answer_outage(handler, None):
            return
        file_download = re.fullmatch(r"/file/bot([^/]*)/(.+)", path)
        if file_download and handler.command == "GET":
            self._serve_file(handler, *file_download.groups())
            return
        handler.write_json(404, BotApiError(404, "Not Found").payload())

    def _answer_outage(self, handler: _BotApiRequestHandler, call: JsonDict | None) -> bool:
        """During set_unreachable(): drop or fail the request and return True."""
        with self._cond:
            if not self._unreachable:
                return False
            status = self._unreachable_status
            if call is not None:
                call["status"] = status or 0
                self._cond.notify_all()
        if status is None:
            handler.drop()
        else:
            description = _default_error_description(status, None)
            handler.write_json(status, BotApiError(status, description).payload())
        return True

    def _serve_method(
        self,
        handler: _BotApiRequestHandler,
        token: str,
        method: str,
        query: str,
        body: bytes,
    ) -> None:
        call: JsonDict = {
            "method": method,
            "params": {},
            "time": time.time(),
            "token_valid": token == self.token,
            "status": None,
        }
        body_error: BotApiError | None = None
        try:
            call["params"] = _decode_params(query, handler.headers.get("Content-Type", ""), body)
        except ValueError as exc:
            body_error = BotApiError(400, f"Bad Request: can't parse request body: {exc}")
        with self._cond:
            self._calls.append(call)
            self._cond.notify_all()
            held = self._holds.get(method.lower())
        if held is not None:
            held.wait(timeout=30)
        if self._answer_outage(handler, call):
            return
        if body_error is not None:
            self._answer(handler, call, body_error.status, body_error.payload())
            return
        if token != self.token:
            self._answer(handler, call, 401, BotApiError(401, "Unauthorized").payload())
            return
        implementation = self._methods().get(method.lower())
        if implementation is None:
            self._answer(handler, call, 404, BotApiError(404, METHOD_NOT_FOUND).payload())
            return
        try:
            self._raise_injected_failure(method)
            result = implementation(call["params"])
        except BotApiError as error:
            self._answer(handler, call, error.status, error.payload())
            return
        except _DropConnection:
            with self._cond:
                call["status"] = 0
            handler.drop()
            return
        except Exception as exc:  # a bug in the fake must show up in the test, not hang it
            failure = BotApiError(500, f"Internal Server Error: fake server failed: {exc!r}")
            self._answer(handler, call, 500, failure.payload())
            return
        self._answer(handler, call, 200, {"ok": True, "result": result})

    def _answer(
        self, handler: _BotApiRequestHandler, call: JsonDict, status: int, payload: JsonDict
    ) -> None:
        with self._cond:
            call["status"] = status
            self._cond.notify_all()
        handler.write_json(status, payload)

    def _serve_file(self, handler: _BotApiRequestHandler, token: str, file_path: str) -> None:
        if token != self.token:
            handler.write_json(401, BotApiError(401, "Unauthorized").payload())
            return
        with self._cond:
            stored = next(
                (item for item in self._files.values() if item.file_path == file_path), None
            )
        if stored is None:
            handler.write_json(404, BotApiError(404, "Not Found").payload())
            return
        handler.write_bytes(200, stored.data, "application/octet-stream")

    def _raise_injected_failure(self, method: str) -> None:
        with self._cond:
            for key in (method.lower(), "*"):
                queue = self._failures.get(key)
                if queue:
                    raise queue.popleft()

    def _methods(self) -> dict[str, Callable[[JsonDict], Any]]:
        return {
            "getme": self._api_get_me,
            "getupdates": self._api_get_updates,
            "sendmessage": self._api_send_message,
            "senddocument": self._api_send_document,
            "sendchataction": self._api_send_chat_action,
            "setmycommands": self._api_set_my_commands,
            "getmycommands": self._api_get_my_commands,
            "deletemycommands": self._api_delete_my_commands,
            "setwebhook": self._api_set_webhook,
            "deletewebhook": self._api_delete_webhook,
            "getwebhookinfo": self._api_get_webhook_info,
            "editmessagetext": self._api_edit_message_text,
            "sendmessagedraft": self._api_send_message_draft,
            "deletemessage": self._api_delete_message,
            "getfile": self._api_get_file,
            "getchatmember": self._api_get_chat_member,
            "answercallbackquery": self._api_answer_callback_query,
            "close": lambda params: True,
            "logout": lambda params: True,
        }

    # -- Bot API methods ---------------------------------------------------------------------

    def _bot_as_sender(self) -> JsonDict:
        # A message's "from" is a plain User: getMe's capability flags are not part of it.
        return {key: self.bot_user[key] for key in ("id", "is_bot", "first_name", "username")}

    def _api_get_me(self, params: JsonDict) -> JsonDict:
        return dict(self.bot_user)

    def _api_get_updates(self, params: JsonDict) -> list[JsonDict]:
        offset = _int_param(params, "offset")
        limit = min(max(_int_param(params, "limit") or 100, 1), 100)
        timeout = max(float(params.get("timeout") or 0), 0.0)
        allowed = params.get("allowed_updates")
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._webhook is not None:
                raise BotApiError(409, CONFLICT_WEBHOOK_ACTIVE)
            # Like Telegram, the newer request wins and the older poller gets the 409; that is
            # also what lets PTB's final "confirm offset" call through while its cancelled long
            # poll is still parked here.
            self._poll_generation += 1
            generation = self._poll_generation
            self._cond.notify_all()
            if isinstance(allowed, list):
                self._allowed_updates = frozenset(allowed) if allowed else None
            self._confirm_updates(offset)
            while True:
                if self._unreachable or self._stopping:
                    raise _DropConnection
                batch = self._deliverable_updates(limit)
                if batch:
                    return batch
                if generation != self._poll_generation:
                    raise BotApiError(409, CONFLICT_OTHER_POLLER)
                if self._webhook is not None:
                    raise BotApiError(409, CONFLICT_WEBHOOK_ACTIVE)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._cond.wait(remaining)

    def _api_send_document(self, params: JsonDict) -> JsonDict:
        """A document the bot uploads; kept (bytes and caption) in `documents()`."""
        with self._cond:
            chat = self._resolve_chat(params.get("chat_id"))
            upload = params.get("document")
            if not isinstance(upload, UploadedFile):
                raise BotApiError(400, "Bad Request: there is no document in the request")
            stored = self._store_file("documents", "bin", upload.data)
            message: JsonDict = {
                "message_id": self._next_message_id(chat["id"]),
                "from": self._bot_as_sender(),
                "chat": dict(chat),
                "date": int(time.time()),
                "document": {
                    "file_id": stored.file_id,
                    "file_unique_id": stored.file_unique_id,
                    "file_name": upload.filename,
                    "file_size": len(upload.data),
                },
            }
            if params.get("caption"):
                message["caption"] = str(params["caption"])
            self._remember_message(message)
            self._documents.append(
                {
                    "chat_id": chat["id"],
                    "filename": upload.filename,
                    "data": upload.data,
                    "caption": params.get("caption"),
                }
            )
            self._cond.notify_all()
            return copy.deepcopy(message)

    async def wait_for_documents_async(
        self, chat_id: int | str, n: int = 1, timeout: float = 5.0
    ) -> list[JsonDict]:
        """Wait (off the event loop) until ``n`` documents went to ``chat_id``; return them."""

        def wait() -> list[JsonDict]:
            deadline = time.monotonic() + timeout
            with self._cond:
                while len(found := self.documents(chat_id)) < n:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise AssertionError(
                            f"expected {n} document(s) to chat {chat_id} within {timeout}s, "
                            f"got {len(found)}"
                        )
                    self._cond.wait(remaining)
                return found

        return await asyncio.to_thread(wait)

    def documents(self, chat_id: int | str | None = None) -> list[JsonDict]:
        """Documents the bot sent: ``chat_id``, ``filename``, ``data`` (bytes), ``caption``."""
        with self._cond:
            return [
                copy.deepcopy(d)
                for d in self._documents
                if chat_id is None or d["chat_id"] == chat_id
            ]

    def _api_send_message(self, params: JsonDict) -> JsonDict:
        with self._cond:
            chat = self._resolve_chat(params.get("chat_id"))
            raw_text = params.get("text")
            if raw_text is None or not str(raw_text).strip():
                raise BotApiError(400, MESSAGE_TEXT_EMPTY)
            raw_text = str(raw_text)
            parse_mode = params.get("parse_mode") or None
            rendered = self._render_text(raw_text, parse_mode, params.get("entities"))
            reply_target = self._reply_target(chat["id"], params)
            message: JsonDict = {
                "message_id": self._next_message_id(chat["id"]),
                "from": self._bot_as_sender(),
                "chat": dict(chat),
                "date": int(time.time()),
                "text": rendered.text,
            }
            if rendered.entities:
                message["entities"] = rendered.entities
            thread_id = _int_param(params, "message_thread_id")
            if thread_id:
                message["message_thread_id"] = thread_id
                if chat.get("is_forum"):
                    message["is_topic_message"] = True
            if reply_target is not None:
                message["reply_to_message"] = _without_nested_reply(reply_target)
            reply_markup = params.get("reply_markup")
            if isinstance(reply_markup, dict) and "inline_keyboard" in reply_markup:
                message["reply_markup"] = reply_markup
            self._remember_message(message)
            self._sent.append(
                {
                    "chat_id": chat["id"],
                    "message_id": message["message_id"],
                    "text": raw_text,
                    "plain_text": rendered.text,
                    "parse_mode": parse_mode,
                    "entities": rendered.entities,
                    "message_thread_id": thread_id,
                    "reply_to_message_id": reply_target["message_id"] if reply_target else None,
                    "reply_markup": reply_markup,
                    "disable_notification": bool(params.get("disable_notification")),
                    "link_preview_options": params.get("link_preview_options"),
                    "params": copy.deepcopy(params),
                    "message": copy.deepcopy(message),
                    "edit_count": 0,
                    "deleted": False,
                }
            )
            self._cond.notify_all()
            return copy.deepcopy(message)

    def _api_edit_message_text(self, params: JsonDict) -> JsonDict:
        with self._cond:
            if params.get("inline_message_id"):
                raise BotApiError(400, "Bad Request: inline messages are not supported here")
            chat = self._resolve_chat(params.get("chat_id"))
            message_id = _int_param(params, "message_id")
            message = self._messages.get(chat["id"], {}).get(message_id or 0)
            if message is None:
                raise BotApiError(400, "Bad Request: message to edit not found")
            if message.get("from", {}).get("id") != self.bot_user["id"]:
                raise BotApiError(400, "Bad Request: message can't be edited")
            raw_text = params.get("text")
            if raw_text is None or not str(raw_text).strip():
                raise BotApiError(400, MESSAGE_TEXT_EMPTY)
            raw_text = str(raw_text)
            parse_mode = params.get("parse_mode") or None
            rendered = self._render_text(raw_text, parse_mode, params.get("entities"))
            reply_markup = params.get("reply_markup")
            if (
                rendered.text == message.get("text")
                and rendered.entities == message.get("entities", [])
                and reply_markup == message.get("reply_markup")
            ):
                raise BotApiError(400, MESSAGE_NOT_MODIFIED)
            message["text"] = rendered.text
            message["edit_date"] = int(time.time())
            if rendered.entities:
                message["entities"] = rendered.entities
            else:
                message.pop("entities", None)
            if isinstance(reply_markup, dict) and "inline_keyboard" in reply_markup:
                message["reply_markup"] = reply_markup
            else:
                message.pop("reply_markup", None)
            for record in self._sent:
                if record["chat_id"] == chat["id"] and record["message_id"] == message_id:
                    record.update(
                        text=raw_text,
                        plain_text=rendered.text,
                        parse_mode=parse_mode,
                        entities=rendered.entities,
                        reply_markup=reply_markup,
                        message=copy.deepcopy(message),
                        edit_count=record["edit_count"] + 1,
                    )
            self._cond.notify_all()
            return copy.deepcopy(message)

    def _api_send_message_draft(self, params: JsonDict) -> bool:
        """Bot API 9.5+: an ephemeral preview in a private chat, updated by ``draft_id``."""
        with self._cond:
            chat = self._resolve_chat(params.get("chat_id"))
            if chat.get("type") != "private":
                raise BotApiError(400, "Bad Request: drafts can be sent only to private chats")
            if not _int_param(params, "draft_id"):
                raise BotApiError(400, "Bad Request: draft_id must be non-zero")
            text = params.get("text")
            if text is not None:
                self._render_text(str(text), params.get("parse_mode") or None, None)
            self._drafts.append(
                {
                    "chat_id": chat["id"],
                    "draft_id": _int_param(params, "draft_id"),
                    "text": text,
                    "time": time.time(),
                }
            )
            self._cond.notify_all()
            return True

    def drafts(self, chat_id: int | str | None = None) -> list[JsonDict]:
        """sendMessageDraft calls taken: ``chat_id, draft_id, text, time``, oldest first."""
        with self._cond:
            return [dict(draft) for draft in self._drafts if chat_id in (None, draft["chat_id"])]

    def _api_delete_message(self, params: JsonDict) -> bool:
        with self._cond:
            chat = self._resolve_chat(params.get("chat_id"))
            message_id = _int_param(params, "message_id")
            if self._messages.get(chat["id"], {}).pop(message_id or 0, None) is None:
                raise BotApiError(400, "Bad Request: message to delete not found")
            for record in self._sent:
                if record["chat_id"] == chat["id"] and record["message_id"] == message_id:
                    record["deleted"] = True
            self._cond.notify_all()
            return True

    def _api_send_chat_action(self, params: JsonDict) -> bool:
        with self._cond:
            chat = self._resolve_chat(params.get("chat_id"))
            action = params.get("action")
            if action not in CHAT_ACTIONS:
                raise BotApiError(400, "Bad Request: wrong parameter action in request")
            self._actions.append((chat["id"], action))
            self._cond.notify_all()
            return True

    def _api_set_my_commands(self, params: JsonDict) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise BotApiError(400, 'Bad Request: parameter "commands" is required')
        if len(commands) > 100:
            raise BotApiError(400, "Bad Request: too many commands specified")
        for command in commands:
            if not isinstance(command, dict) or not _COMMAND_NAME.match(
                str(command.get("command", ""))
            ):
                raise BotApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", "")).strip()) <= 256:
                raise BotApiError(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
        key = _commands_key(params.get("scope"), params.get("language_code") or "")
        with self._cond:
            self._commands[key] = [
                {"command": command["command"], "description": command["description"]}
                for command in commands
            ]
            self._cond.notify_all()
        return True

    def _api_get_my_commands(self, params: JsonDict) -> list[JsonDict]:
        return self.commands_for(params.get("scope"), params.get("language_code") or "")

    def _api_delete_my_commands(self, params: JsonDict) -> bool:
        key = _commands_key(params.get("scope"), params.get("language_code") or "")
        with self._cond:
            self._commands.pop(key, None)
        return True

    def _api_set_webhook(self, params: JsonDict) -> bool:
        url = str(params.get("url") or "")
        with self._cond:
            if params.get("drop_pending_updates"):
                self._updates.clear()
            if not url:
                self._webhook = None
            else:
                # Telegram demands HTTPS on ports 443/80/88/8443; tests serve plain HTTP on any
                # port, so the fake accepts any http(s) URL.
                if not re.match(r"^https?://", url):
                    raise BotApiError(
                        400, "Bad Request: bad webhook: invalid webhook URL specified"
                    )
                self._webhook = {
                    "url": url,
                    "secret_token": params.get("secret_token"),
                    "allowed_updates": params.get("allowed_updates"),
                    "max_connections": _int_param(params, "max_connections") or 40,
                }
            self._cond.notify_all()
        return True

    def _api_delete_webhook(self, params: JsonDict) -> bool:
        with self._cond:
            self._webhook = None
            if params.get("drop_pending_updates"):
                self._updates.clear()
            self._cond.notify_all()
        return True

    def _api_get_webhook_info(self, params: JsonDict) -> JsonDict:
        with self._cond:
            info: JsonDict = {
                "url": "",
                "has_custom_certificate": False,
                "pending_update_count": len(self._updates),
            }
            if self._webhook is not None:
                info["url"] = self._webhook["url"]
                info["max_connections"] = self._webhook["max_connections"]
                if self._webhook["allowed_updates"] is not None:
                    info["allowed_updates"] = self._webhook["allowed_updates"]
            return info

    def _api_get_file(self, params: JsonDict) -> JsonDict:
        with self._cond:
            stored = self._files.get(str(params.get("file_id") or ""))
        if stored is None:
            raise BotApiError(
                400, "Bad Request: wrong file_id or the file is temporarily unavailable"
            )
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": len(stored.data),
            "file_path": stored.file_path,
        }

    def _api_get_chat_member(self, params: JsonDict) -> JsonDict:
        with self._cond:
            chat = self._resolve_chat(params.get("chat_id"))
            user_id = _int_param(params, "user_id")
            if user_id is None:
                raise BotApiError(400, "Bad Request: user_id is empty")
            if chat["type"] == "private":
                status = "member" if user_id in (chat["id"], self.bot_user["id"]) else "left"
                return {
                    "status": status,
                    "user": {"id": user_id, "is_bot": False, "first_name": "Test"},
                }
            return self._groups.member(chat["id"], user_id)

    # -- state helpers (caller holds self._cond) ---------------------------------------------

    def _assign_update_id(self, update: JsonDict) -> None:
        if update.get("update_id") is None:
            update["update_id"] = self._next_update_id
        self._next_update_id = max(self._next_update_id, int(update["update_id"]) + 1)

    def _confirm_updates(self, offset: int | None) -> None:
        if not offset:
            return
        if offset > 0:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        else:
            # A negative offset keeps the last -offset updates and forgets the rest.
            self._updates = self._updates[offset:]

    def _deliverable_updates(self, limit: int) -> list[JsonDict]:
        allowed = self._allowed_updates
        kept = []
        for update in self._updates:
            kinds = [key for key in update if key != "update_id"]
            kind = kinds[0] if kinds else ""
            if (allowed is None and kind not in _OPT_IN_UPDATE_TYPES) or (
                allowed is not None and kind in allowed
            ):
                kept.append(update)
        # Telegram drops updates of types the bot did not ask for rather than keeping them.
        self._updates = kept
        return copy.deepcopy(kept[:limit])

    def _next_message_id(self, chat_id: int) -> int:
        self._last_message_id[chat_id] = self._last_message_id.get(chat_id, 0) + 1
        return self._last_message_id[chat_id]

    def _remember_message(self, message: JsonDict) -> None:
        chat = message.get("chat") or {}
        chat_id = chat.get("id")
        if chat_id is None or "message_id" not in message:
            return
        self._chats.setdefault(chat_id, dict(chat))
        self._messages.setdefault(chat_id, {})[message["message_id"]] = copy.deepcopy(message)
        self._last_message_id[chat_id] = max(
            self._last_message_id.get(chat_id, 0), int(message["message_id"])
        )

    def _resolve_chat(self, chat_id: Any) -> JsonDict:
        if chat_id is None or chat_id == "":
            raise BotApiError(400, "Bad Request: chat_id is empty")
        if isinstance(chat_id, str) and not re.fullmatch(r"-?\d+", chat_id):
            username = chat_id.removeprefix("@").lower()
            for known in self._chats.values():
                if str(known.get("username", "")).lower() == username:
                    return known
            raise BotApiError(400, "Bad Request: chat not found")
        numeric = int(chat_id)
        moved = self._groups.moved_to(numeric)
        if moved is not None:
            raise BotApiError(400, MIGRATED_DESCRIPTION, migrate_to_chat_id=moved)
        chat = self._chats.get(numeric)
        if chat is None:
            # Unknown chats are allowed (a test may address a chat it never wrote from).
            if numeric > 0:
                chat = {"id": numeric, "type": "private", "first_name": "Test"}
            elif str(numeric).startswith("-100"):
                chat = {"id": numeric, "type": "supergroup", "title": "Test Supergroup"}
            else:
                chat = {"id": numeric, "type": "group", "title": "Test Group"}
            self._chats[numeric] = chat
        return chat

    def _reply_target(self, chat_id: int, params: JsonDict) -> JsonDict | None:
        reply = params.get("reply_parameters")
        if isinstance(reply, dict):
            message_id = reply.get("message_id")
            allow_missing = bool(reply.get("allow_sending_without_reply"))
            target_chat = reply.get("chat_id", chat_id)
        else:
            message_id = _int_param(params, "reply_to_message_id")
            allow_missing = bool(params.get("allow_sending_without_reply"))
            target_chat = chat_id
        if not message_id:
            return None
        if isinstance(target_chat, str) and re.fullmatch(r"-?\d+", target_chat):
            target_chat = int(target_chat)
        target = self._messages.get(target_chat, {}).get(int(message_id))
        if target is None and not allow_missing:
            raise BotApiError(400, "Bad Request: message to be replied not found")
        return target

    def _render_text(
        self, raw_text: str, parse_mode: str | None, explicit_entities: Any
    ) -> ParsedText:
        if parse_mode is None:
            entities = explicit_entities if isinstance(explicit_entities, list) else []
            rendered = ParsedText(raw_text, copy.deepcopy(entities))
        elif parse_mode.lower() == "html":
            if self._html_rejector is not None and self._html_rejector(raw_text):
                first_tag = re.search(r"<([a-zA-Z][\w-]*)", raw_text)
                tag = first_tag.group(1).lower() if first_tag else "b"
                raise BotApiError(
                    400,
                    CANT_PARSE_ENTITIES + f'Can\'t find end tag corresponding to start tag "{tag}"',
                )
            try:
                rendered = parse_telegram_html(raw_text)
            except HtmlParseError as exc:
                raise BotApiError(400, CANT_PARSE_ENTITIES + str(exc)) from None
        elif parse_mode.lower() in ("markdown", "markdownv2"):
            # Markdown is passed through unparsed; only the limits below are checked.
            rendered = ParsedText(raw_text, [])
        else:
            raise BotApiError(400, "Bad Request: unsupported parse_mode")
        if not rendered.text.strip():
            raise BotApiError(400, MESSAGE_TEXT_EMPTY)
        if utf16_len(rendered.text) > MAX_MESSAGE_UTF16_UNITS:
            raise BotApiError(400, MESSAGE_TOO_LONG)
        return rendered

    # -- incoming messages -------------------------------------------------------------------

    def _text_content(self, text: str, entities: list[JsonDict] | None, caption: bool) -> JsonDict:
        found = detect_entities(text)
        for entity in entities or []:
            if entity not in found:
                found.append(copy.deepcopy(entity))
        found.sort(key=lambda entity: (entity["offset"], -entity["length"]))
        if not caption:
            content: JsonDict = {"text": text}
            if found:
                content["entities"] = found
            return content
        stored = self._store_file("photos", "jpg", b"\x89PNG\r\n\x1a\nfake-photo")
        content = {
            "photo": [
                {
                    "file_id": stored.file_id,
                    "file_unique_id": stored.file_unique_id,
                    "width": 1280,
                    "height": 960,
                    "file_size": len(stored.data),
                }
            ],
            "caption": text,
        }
        if found:
            content["caption_entities"] = found
        return content

    @staticmethod
    def _add_caption(content: JsonDict, caption: str | None) -> None:
        if caption:
            content["caption"] = caption
            entities = detect_entities(caption)
            if entities:
                content["caption_entities"] = entities

    def _store_file(self, folder: str, extension: str, data: bytes) -> _StoredFile:
        number = next(self._file_counter)
        stored = _StoredFile(
            file_id=f"fake-{folder}-{number}",
            file_unique_id=f"u{folder[:3]}{number}",
            file_path=f"{folder}/file_{number}.{extension}",
            data=data,
        )
        with self._cond:
            self._files[stored.file_id] = stored
        return stored

    def _incoming(
        self,
        content: JsonDict,
        *,
        chat_id: int,
        user_id: int | None,
        chat_type: str,
        username: str | None,
        first_name: str,
        thread_id: int | None,
        reply_to_bot: bool,
        push: bool,
        language_code: str = "en",
        sender: Callable[[JsonDict], JsonDict] | None = None,
    ) -> JsonDict:
        """``sender(chat)``: fields that say the message was sent on behalf of a chat."""
        if chat_type not in ("private", "group", "supergroup"):
            raise ValueError(f"chat_type must be private, group or supergroup, not {chat_type!r}")
        if user_id is None:
            if chat_type != "private":
                raise ValueError("user_id is required for group and supergroup chats")
            user_id = chat_id
        user: JsonDict = {
            "id": user_id,
            "is_bot": False,
            "first_name": first_name,
            "language_code": language_code,
        }
        if username:
            user["username"] = username
        if chat_type == "private":
            chat: JsonDict = {"id": chat_id, "type": "private", "first_name": first_name}
            if username:
                chat["username"] = username
        elif chat_type == "group":
            chat = {"id": chat_id, "type": "group", "title": "Test Group"}
        else:
            chat = {"id": chat_id, "type": "supergroup", "title": "Test Supergroup"}
            if thread_id is not None:
                chat["is_forum"] = True
        with self._cond:
            known = self._chats.get(chat_id)
            if known is None or known.get("type") != chat_type or chat.get("is_forum"):
                self._chats[chat_id] = chat
            else:
                chat = known
            if reply_to_bot:
                replied = self._last_bot_message(chat_id) or self._synthesize_bot_message(chat)
            message: JsonDict = {
                "message_id": self._next_message_id(chat_id),
                "from": user,
                "chat": dict(chat),
                "date": int(time.time()),
                **copy.deepcopy(content),
            }
            if sender is not None:
                message.update(sender(dict(chat)))
            if thread_id is not None:
                message["message_thread_id"] = thread_id
                message["is_topic_message"] = True
            if reply_to_bot:
                message["reply_to_message"] = _without_nested_reply(replied)
            self._remember_message(message)
            if chat_type != "private":
                self._groups.seen(chat_id, user)
            update: JsonDict = {"update_id": None, "message": message}
            self._assign_update_id(update)
            if push:
                self._updates.append(copy.deepcopy(update))
            self._cond.notify_all()
            return update

    def _last_bot_message(self, chat_id: int) -> JsonDict | None:
        bot_messages = [
            message
            for message in self._messages.get(chat_id, {}).values()
            if message.get("from", {}).get("id") == self.bot_user["id"]
        ]
        return max(bot_messages, key=lambda message: message["message_id"], default=None)

    def _synthesize_bot_message(self, chat: JsonDict) -> JsonDict:
        message = {
            "message_id": self._next_message_id(chat["id"]),
            "from": self._bot_as_sender(),
            "chat": dict(chat),
            "date": int(time.time()),
            "text": "(an earlier message of the bot)",
        }
        self._remember_message(message)
        return message


def forward_origin_user(name: str, date: int, user_id: int = 777) -> JsonDict:
    """A ``forward_origin`` of a message first written by the user ``name``."""
    return {
        "type": "user",
        "date": date,
        "sender_user": {"id": user_id, "is_bot": False, "first_name": name},
    }


def _without_nested_reply(message: JsonDict) -> JsonDict:
    # Telegram includes the replied-to message one level deep only.
    shallow = copy.deepcopy(message)
    shallow.pop("reply_to_message", None)
    return shallow


def _commands_key(scope: Any, language_code: str) -> tuple[str, str]:
    scope = scope if isinstance(scope, dict) else {"type": "default"}
    return json.dumps(scope, sort_keys=True), language_code


def _int_param(params: JsonDict, name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BotApiError(400, f"Bad Request: invalid {name} specified") from None


def _decode_form_value(name: str, raw: str) -> Any:
    if name in _STRING_PARAMS:
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _decode_params(query: str, content_type: str, body: bytes) -> JsonDict:
    """Parameters from the query string and a form, multipart or JSON body, like Telegram."""
    params: JsonDict = {
        name: _decode_form_value(name, value)
        for name, value in parse_qsl(query, keep_blank_values=True)
    }
    media_type = content_type.split(";", 1)[0].strip().lower()
    if not body:
        return params
    if media_type == "application/json":
        decoded = json.loads(body)
        if not isinstance(decoded, dict):
            raise ValueError("JSON body must be an object")
        params.update(decoded)
    elif media_type == "multipart/form-data":
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body
        )
        if not message.is_multipart():
            raise ValueError("malformed multipart body")
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if not isinstance(name, str):
                continue
            decoded = part.get_payload(decode=True)
            payload = decoded if isinstance(decoded, bytes) else b""
            filename = part.get_filename()
            if filename is not None or part.get_content_type() not in ("text/plain",):
                params[name] = UploadedFile(filename, part.get_content_type(), payload)
            else:
                charset = part.get_content_charset() or "utf-8"
                params[name] = _decode_form_value(name, payload.decode(charset))
    else:
        # PTB posts application/x-www-form-urlencoded; treat anything else the same way.
        for name, value in parse_qsl(body.decode("utf-8"), keep_blank_values=True):
            params[name] = _decode_form_value(name, value)
    return params


class _FakeHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    # stop() wakes long polls itself; do not wait for handler threads on close.
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: TelegramServer) -> None:
        self.fake = fake
        super().__init__(address, _BotApiRequestHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed mid-request (crash tests) resets its socket; that is expected.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _BotApiRequestHandler(BaseHTTPRequestHandler):
    # Keep-alive like the real API: PTB's httpx pool reuses connections.
    protocol_version = "HTTP/1.1"
    server: _FakeHttpServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle plus the client's delayed
        # ACK adds ~40 ms to every call.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake._track_connection(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track_connection(self.connection, add=False)

    def do_POST(self) -> None:
        self.server.fake._serve(self)

    def do_GET(self) -> None:
        self.server.fake._serve(self)

    def log_message(self, format: str, *args: Any) -> None:
        # Test output stays readable; calls() is the log.
        pass

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def write_json(self, status: int, payload: JsonDict) -> None:
        body = json.dumps(payload, ensure_ascii=False, default=_json_default).encode("utf-8")
        self.write_bytes(status, body, "application/json")

    def write_bytes(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            # The client went away (e.g. a cancelled long poll); nothing to answer.
            self.close_connection = True


def _json_default(value: object) -> Any:
    if isinstance(value, UploadedFile):
        return {"filename": value.filename, "content_type": value.content_type}
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
