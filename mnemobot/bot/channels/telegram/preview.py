"""A reply shown in Telegram while the model writes it, and the preview messages kept on disk.

Which method where (`telegram.streaming`):

- `auto` (the default): private chats by edits, groups not at all. An edited message is
  the reply itself: the final text replaces the preview in place, so nothing appears twice.
  Replacing a `sendMessageDraft` preview with the sent message made the final reply flash
  twice in other assistants' clients (openclaw #33453, #36697, #40915; nanobot #2235, both
  moved away from drafts for it). Groups share Telegram's 20 messages a minute per group,
  which edits would spend in seconds, delaying every member's replies: they see "typing…"
  and the finished reply.
- `edit`: edits in every chat (groups too, within their share of the limit).
- `draft`: `sendMessageDraft` in private chats (Bot API 9.5+), then the reply as a message;
  groups get no preview (drafts are private-chat only).
- `off`: no preview anywhere.

Edits: the first text becomes a message once it is worth a notification (Telegram notifies
for that `sendMessage` only, never for the edits: a message of "M" is what the lock screen
would show), then edits as text arrives, at most one Bot API call per
`TelegramTiming.stream_edit_seconds` per chat, plain text (half-written Markdown does not
render); a preview longer than one message continues in the next. The final reply, rendered
Markdown to HTML, goes through the durable outbox as edits of these messages (see
`TelegramChannel.send_reply`). A preview call is the first thing given up under Telegram's
limits (see `rate_limits`): one that finds no room is skipped, a 429 pauses this chat's
previews only, and nothing here ever delays a final reply.

Each preview message is noted in the preview journal before it is shown again: after a
crash, the message's answer arrives as an edit of the preview the user already sees, not
as a second copy beside it. With replicas the journal is in Redis (`redis_previews`), so
the replica that takes a dead one's chat over edits the dead one's preview.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import zlib
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

from telegram import Bot, ReplyParameters
from telegram.error import BadRequest, RetryAfter, TelegramError

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.bot.channels.telegram.rate_limits import (
    PREVIEW_CALL,
    PreviewSkipped,
    RepliesFirstRateLimiter,
)
from mnemobot.bot.channels.telegram.split import split_plain_for_telegram
from mnemobot.bot.delivery.journal import DurableQueue, QueuedEntry
from mnemobot.bot.delivery.journal_threads import OUTBOX_THREADS, in_thread

log = logging.getLogger(__name__)

StreamingMode = Literal["off", "edit", "draft", "auto"]
PreviewMethod = Literal["edit", "draft"]

# At close, a preview call already on its way gets this long to land before the final
# reply is queued (so it cannot overwrite it); a wait for a rate limit is simply dropped.
CALL_LANDING_SECONDS = 2.0
# The first preview message waits for its first sentence or this many characters (a lock
# screen shows about two lines): at 15-20 tokens/s of a local model, about four
# characters a token, 40 characters take half a second...
FIRST_MESSAGE_CHARS = 40
# ...and for no longer than this after the first text came: a slow model (2-5 tokens/s)
# shows what it has by then, instead of "typing…" for a whole sentence.
FIRST_MESSAGE_WAIT_SECONDS = 2.5
# The end of a sentence after a word ("Sure.", "好的。"; not a list's "1.") or a whole
# line ("Here is the plan:" and its line break).
_SENTENCE_END = re.compile(r"[^\W\d_][\"')\]*]*[.!?…。！？](?=\s|$)|\S[ \t]*\n")


def worth_a_notification(text: str) -> bool:
    """Whether `text` may be a streamed reply's first message, the one Telegram notifies
    for: its first sentence is complete, or it is FIRST_MESSAGE_CHARS long."""
    return len(text.strip()) >= FIRST_MESSAGE_CHARS or bool(_SENTENCE_END.search(text))


def preview_method(mode: StreamingMode, is_group: bool) -> PreviewMethod | None:
    """How a chat sees a reply while it is written (see the module docstring), or None."""
    if mode == "edit":
        return "edit"
    if mode == "draft":
        return None if is_group else "draft"
    if mode == "auto":
        return None if is_group else "edit"
    return None


class ShownPreviews(Protocol):
    """Where the preview messages of answers not yet handed to the outbox are noted, per
    inbox receipt: a journal file (`PreviewJournal`), or Redis for replicas."""

    async def shown(self, receipts: Sequence[str]) -> tuple[str | None, list[int]]:
        """The preview an earlier run showed for these messages: the receipt it is kept
        under and its message ids, in order; (None, []) when none.

        After a crash the backlog comes back merged with what arrived meanwhile, so the
        answer's last receipt is often a newer message's: the preview is found under any
        of the turn's receipts, the oldest first (the one an earlier restart went on
        editing)."""
        ...

    async def add(self, key: str, receipt: str, index: int, message_id: int) -> None: ...

    async def settle(self, receipts: Sequence[str]) -> None:
        """The answer is in the outbox, which now holds these ids (with replicas: and its
        messages are marked answered): forget them."""
        ...


class PreviewJournal:
    """The preview messages of answers not yet handed to the outbox, per inbox receipt, in
    a journal file (`ShownPreviews`)."""

    def __init__(self, path: Path, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.queue = DurableQueue(path)
        self.clock = clock

    async def shown(self, receipts: Sequence[str]) -> tuple[str | None, list[int]]:
        found: dict[str, dict[int, int]] = {}
        for entry in self.queue.pending():
            receipt = entry.data.get("receipt")
            if isinstance(receipt, str) and receipt in receipts:
                found.setdefault(receipt, {})[int(entry.data["index"])] = int(
                    entry.data["message_id"]
                )
        for receipt in receipts:
            if receipt in found:
                ids = found[receipt]
                return receipt, [ids[i] for i in sorted(ids)]
        return None, []

    async def add(self, key: str, receipt: str, index: int, message_id: int) -> None:
        data = {"receipt": receipt, "index": index, "message_id": message_id}
        entry = QueuedEntry(id=f"{receipt}:preview:{index}", key=key, data=data, at=self.clock())
        await in_thread(OUTBOX_THREADS, self.queue.add, [entry], in_memory_on_failure=True)

    async def settle(self, receipts: Sequence[str]) -> None:
        ids = [e.id for e in self.queue.pending() if e.data.get("receipt") in receipts]
        if ids:
            await in_thread(OUTBOX_THREADS, self.queue.done, ids, in_memory_on_failure=True)


class TelegramPreview:
    """One reply's preview in one chat (a `ReplyStream`); sends at its own pace."""

    def __init__(
        self,
        bot: Bot,
        *,
        chat_id: int,
        thread_id: int | None,
        quote: int | None,
        method: PreviewMethod,
        interval_seconds: float,
        journal: ShownPreviews | None,
        key: str,
        receipts: Sequence[str],
        replies_waiting: Callable[[], bool] | None = None,
    ) -> None:
        """`replies_waiting`: whether an earlier reply of the chat is still in the outbox
        (a reminder, a command's answer held back by a 429); no new preview message goes
        out before it, so the chat's messages keep their order."""
        self.bot = bot
        self.replies_waiting = replies_waiting
        self.chat_id = chat_id
        self.thread_id = thread_id
        self.quote = quote
        self.method = method
        self.interval_seconds = interval_seconds
        self.journal = journal
        self.key = key
        self.receipts = tuple(receipts)
        # Messages an earlier run showed this answer in (a crash mid-stream, maybe on
        # another replica) are edited, and new ones are kept under the same receipt: looked
        # up before the first call (`_recall`).
        self.message_ids: list[int] = []
        self._recalled = journal is None
        self.receipt = receipts[-1] if receipts else None
        self._shown_parts: list[str | None] = []
        # Drafts are told apart by a non-zero id; one per reply.
        self.draft_id = zlib.crc32((self.receipt or key).encode()) or 1
        self.latest = ""
        self.status = ""
        self.first_text = asyncio.Event()
        self.skipped = 0
        self.calls = 0
        self._stop_requested = False
        self._changed = asyncio.Event()
        self._in_call = False
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        # When the first text came (loop time), for FIRST_MESSAGE_WAIT_SECONDS.
        self._first_text_at: float | None = None
        # Preview calls are marked for our limiter (which gives them up first); PTB refuses
        # the mark without a limiter, and another limiter would misread it.
        limiter = getattr(bot, "rate_limiter", None)
        self._marked: dict[str, Any] = (
            {"rate_limit_args": PREVIEW_CALL}
            if isinstance(limiter, RepliesFirstRateLimiter)
            else {}
        )

    # -- ReplyStream -----------------------------------------------------------------------------

    def show(self, text: str) -> None:
        self.latest = text
        self.status = ""
        self._wake()

    def tool_running(self, status: str) -> None:
        self.status = status
        self._wake()

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        self._stop_requested = True

    @property
    def showing(self) -> bool:
        return bool(self.message_ids)

    # -- lifecycle -------------------------------------------------------------------------------

    async def close(self) -> list[int]:
        """No more previews; returns the preview messages, which the final reply edits."""
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            if self._in_call:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(task), CALL_LANDING_SECONDS)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._recall()
        return list(self.message_ids)

    async def _recall(self) -> None:
        """Take up the preview an earlier run showed for this answer, if any."""
        if self._recalled or self.journal is None:
            return
        shown, ids = await self.journal.shown(self.receipts)
        self._recalled = True
        if shown is not None:
            self.receipt = shown
            self.draft_id = zlib.crc32(shown.encode()) or 1
            self.message_ids = ids + self.message_ids
            unknown: list[str | None] = [None] * len(ids)
            self._shown_parts = unknown + self._shown_parts

    def _wake(self) -> None:
        if self._closed:
            return
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"preview:{self.key}")

    def _view(self) -> str:
        if self.status:
            return f"{self.latest}\n\n{self.status}" if self.latest else self.status
        return self.latest

    def _first_message_wait(self) -> float:
        """Seconds the first preview message should still wait for more text (0: none)."""
        if self.method != "edit" or self.message_ids:
            return 0.0
        view = self._view()
        if not view.strip() or worth_a_notification(view):
            return 0.0
        now = asyncio.get_running_loop().time()
        if self._first_text_at is None:
            self._first_text_at = now
        return max(0.0, self._first_text_at + FIRST_MESSAGE_WAIT_SECONDS - now)

    async def _run(self) -> None:
        await self._recall()
        while not self._closed:
            await self._changed.wait()
            self._changed.clear()
            if self._closed:
                return
            wait = self._first_message_wait()
            if wait > 0:
                # More text or the end of the wait, whichever comes first; then look again.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), wait)
                self._changed.set()
                continue
            try:
                self._in_call = True
                try:
                    sent = await self._send(self._view())
                finally:
                    self._in_call = False
            except PreviewSkipped:
                # No room under Telegram's limits right now: the latest text goes next time.
                self.skipped += 1
                self._changed.set()
                sent = True
            except RetryAfter as error:
                retry_after = error.retry_after
                seconds = (
                    retry_after.total_seconds()
                    if isinstance(retry_after, timedelta)
                    else float(retry_after)
                )
                log.info("preview in %s rate limited; pausing it %.0f s", self.chat_id, seconds)
                self.skipped += 1
                self._changed.set()
                await asyncio.sleep(seconds)
                continue
            except BadRequest as error:
                if "not modified" not in error.message.lower():
                    # The preview message is gone or cannot be edited: the final reply
                    # still arrives (the outbox sends it fresh when the edit fails).
                    log.info("preview in %s stopped: %s", self.chat_id, error.message)
                    return
                sent = True
            except TelegramError as error:
                log.debug("preview in %s failed: %s", self.chat_id, error)
                sent = True
            if sent:
                await asyncio.sleep(self.interval_seconds)

    async def _send(self, text: str) -> bool:
        """One Bot API call towards showing `text`; False when nothing needed sending."""
        if not text.strip():
            return False
        parts = split_plain_for_telegram(text)
        new_message = self.method == "draft" or len(parts) > len(self.message_ids)
        if new_message and self.replies_waiting is not None and self.replies_waiting():
            # Tried again at the next interval; the final reply waits its turn anyway.
            raise PreviewSkipped
        if self.method == "draft":
            # A draft shows one message: the part being written.
            self.calls += 1
            await self.bot.send_message_draft(
                self.chat_id,
                self.draft_id,
                parts[-1],
                message_thread_id=self.thread_id,
                **self._marked,
            )
            self.first_text.set()
            return True
        for index, part in enumerate(parts):
            if index < len(self.message_ids):
                if self._shown_parts[index] == part:
                    continue
                self.calls += 1
                await self.bot.edit_message_text(
                    part,
                    chat_id=self.chat_id,
                    message_id=self.message_ids[index],
                    **self._marked,
                )
                self._shown_parts[index] = part
                self.first_text.set()
                return True
            self.calls += 1
            message = await self.bot.send_message(
                self.chat_id,
                part,
                message_thread_id=self.thread_id,
                reply_parameters=(
                    ReplyParameters(message_id=self.quote, allow_sending_without_reply=True)
                    if index == 0 and self.quote is not None
                    else None
                ),
                **self._marked,
            )
            self.message_ids.append(message.message_id)
            self._shown_parts.append(part)
            self.first_text.set()
            if self.journal is not None and self.receipt:
                await self.journal.add(self.key, self.receipt, index, message.message_id)
            return True
        return False
