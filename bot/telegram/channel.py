"""The Telegram channel: a python-telegram-bot Application wired to mnemobot's pipeline.

PTB hands us updates one at a time (`concurrent_updates` off), and every handler returns
after a few microseconds of bookkeeping: messages go into per-chat lanes that run turns in
the background, so `/status` and `/stop` are answered while a turn of the same chat runs,
and arrival order is the order in which the lanes see messages.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any

from telegram import BotCommand, LinkPreviewOptions, Message, Update
from telegram.ext import (
    AIORateLimiter,
    Application,
    ApplicationBuilder,
    ApplicationHandlerStop,
    BaseRateLimiter,
    ContextTypes,
    Defaults,
    MessageHandler,
    TypeHandler,
    filters,
)

from bot.app import App
from bot.commands import COMMANDS, ParsedCommand, parse_command
from bot.telegram.access import (
    GROUP_TYPES,
    BotIdentity,
    Verdict,
    message_text,
    refusal_text,
    verdict_for,
    without_bot_mention,
)
from bot.telegram.aiohttp_request import AiohttpRequest
from bot.telegram.lanes import Admission, ChatLanes, LaneJob
from bot.telegram.replies import ReplySender, ReplyTarget
from config.settings import Settings
from memory.items import to_iso
from systems.context import ChatRef

log = logging.getLogger(__name__)

CHANNEL = "telegram"
CHANNEL_KEY = "mnemobot.telegram_channel"
# Enough to catch a webhook's retries and a restart's re-delivery without growing forever.
REMEMBERED_UPDATE_IDS = 10_000
# RetryAfter (429) is retried by the rate limiter after the wait Telegram asks for.
RATE_LIMIT_RETRIES = 3
# Bot API connections for sends (getUpdates has its own). Telegram takes ~30 messages/s
# per bot, which a few dozen keep-alive connections carry with room to spare even at a 1 s
# round trip; PTB's default of 256 only made httpcore scan more idle connections per call.
CONNECTION_POOL_SIZE = 32
# How long a send may wait for a free connection in a burst (PTB's default is 1 s).
POOL_TIMEOUT_SECONDS = 10.0
CONNECT_TIMEOUT_SECONDS = 10.0
READ_TIMEOUT_SECONDS = 30.0
WRITE_TIMEOUT_SECONDS = 30.0
# Commands that change the session run in the chat's lane, in order with its messages.
LANE_COMMANDS = frozenset({"new", "compact"})

ONLY_TEXT = (
    "I can only read text for now. Please write your message as text "
    "(a caption on a photo or file works too)."
)


def queue_full_text(cap: int) -> str:
    return (
        f"I'm still working on your earlier messages and {cap} more are already waiting, "
        "so I did not take this one. Send it again after my reply, or /stop to cancel."
    )


def stop_text(cancelled: bool, dropped: int) -> str:
    if not cancelled and not dropped:
        return "Nothing is running."
    first = "Stopped the reply in progress." if cancelled else "Nothing was running."
    noun = "message" if dropped == 1 else "messages"
    return f"{first} Dropped {dropped} queued {noun}."


def chat_ref_for(message: Message) -> ChatRef:
    user = message.from_user
    # Forum topics are separate conversations; plain reply threads are not.
    thread = message.message_thread_id if message.is_topic_message else None
    return ChatRef(
        channel=CHANNEL,
        chat_id=str(message.chat.id),
        user_id=str(user.id) if user else None,
        thread_id=str(thread) if thread is not None else None,
        user_name=(user.first_name or user.username) if user else None,
    )


def target_for(message: Message) -> ReplyTarget:
    in_group = message.chat.type in GROUP_TYPES
    return ReplyTarget(
        chat_id=message.chat.id,
        thread_id=message.message_thread_id if message.is_topic_message else None,
        reply_to_message_id=message.message_id if in_group else None,
    )


def target_for_job(job: LaneJob) -> ReplyTarget:
    return ReplyTarget(
        chat_id=int(job.chat.chat_id),
        thread_id=int(job.chat.thread_id) if job.chat.thread_id else None,
        reply_to_message_id=job.reply_to_message_id,
    )


class TelegramChannel:
    """Per-application state: bot identity, lanes, update de-duplication, replies."""

    def __init__(self, app: App, settings: Settings, application: Application) -> None:
        self.app = app
        self.allowed = settings.telegram_allowed_users
        self.replies = ReplySender(application.bot)
        self.lanes = ChatLanes(
            self._run_job,
            lambda: app.runtime.current().telegram,
            keep_unanswered=self._keep_unanswered,
        )
        self.identity: BotIdentity | None = None
        self._seen_ids: set[int] = set()
        self._seen_order: deque[int] = deque()
        self._background: set[asyncio.Task[Any]] = set()
        # Last notice per chat: notices of one chat go out in the order they were made.
        self._last_notice: dict[int, asyncio.Task[Any]] = {}
        app.commands.status_providers.append(self.status_lines)

    # -- lifecycle -----------------------------------------------------------------------------

    async def post_init(self, application: Application) -> None:
        me = await application.bot.get_me()
        self.identity = BotIdentity(user_id=me.id, username=me.username or "")
        await application.bot.set_my_commands(
            [BotCommand(spec.name, spec.description) for spec in COMMANDS]
        )
        log.info("Telegram bot @%s ready; allowed users: %s", me.username, self.allowed.describe())

    async def shutdown(self, grace_seconds: float) -> None:
        """Finish (or after `grace_seconds` cancel) running turns, then pending sends."""
        await self.lanes.shutdown(grace_seconds)
        if self._background:
            await asyncio.wait(set(self._background), timeout=5)
        if self.status_lines in self.app.commands.status_providers:
            self.app.commands.status_providers.remove(self.status_lines)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _notify(self, target: ReplyTarget, text: str) -> None:
        """Send a short answer without holding up other updates, in order within the chat."""
        previous = self._last_notice.get(target.chat_id)

        async def send() -> None:
            if previous is not None:
                await asyncio.wait({previous})
            await self.replies.send_text(target, text)

        task = self._spawn(send())
        self._last_notice[target.chat_id] = task

        def forget(done: asyncio.Task[Any]) -> None:
            if self._last_notice.get(target.chat_id) is done:
                del self._last_notice[target.chat_id]

        task.add_done_callback(forget)

    # -- handlers ------------------------------------------------------------------------------

    async def drop_duplicates(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Group -1: an update seen before (a webhook retry, a re-delivery) goes no further."""
        update_id = update.update_id
        if update_id in self._seen_ids:
            log.info("ignoring update %s: already handled", update_id)
            raise ApplicationHandlerStop
        self._seen_ids.add(update_id)
        self._seen_order.append(update_id)
        if len(self._seen_order) > REMEMBERED_UPDATE_IDS:
            self._seen_ids.discard(self._seen_order.popleft())

    async def on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.message
        if message is None or self.identity is None:
            return
        verdict = verdict_for(message, self.identity, self.allowed)
        if verdict is Verdict.IGNORE:
            return
        target = target_for(message)
        if verdict is Verdict.REFUSE:
            user_id = message.from_user.id if message.from_user else 0
            log.info("refused user %s in chat %s", user_id, message.chat.id)
            self._notify(target, refusal_text(user_id))
            return
        chat = chat_ref_for(message)
        text = message_text(message)
        if text is None or not text.strip():
            self._notify(target, ONLY_TEXT)
            return
        command = parse_command(text, self.identity.username)
        if command is not None:
            await self._on_command(chat, command, target, message)
            return
        if message.chat.type in GROUP_TYPES:
            text = without_bot_mention(text, self.identity) or text
        job = LaneJob(
            chat=chat,
            text=text,
            message_refs=(f"tg:{message.message_id}",),
            reply_to_message_id=target.reply_to_message_id,
        )
        self._admit(job, target)

    async def _on_command(
        self, chat: ChatRef, command: ParsedCommand, target: ReplyTarget, message: Message
    ) -> None:
        if command.name in LANE_COMMANDS:
            job = LaneJob(
                chat=chat,
                text=message_text(message) or "",
                reply_to_message_id=target.reply_to_message_id,
                command=command,
            )
            self._admit(job, target)
            return
        # Awaited here, not spawned: /stop must empty the lane before the next update lands.
        answer = await self.app.commands.run(chat, command, stop=self._stop)
        self._notify(target, answer)

    def _admit(self, job: LaneJob, target: ReplyTarget) -> None:
        admission = self.lanes.submit(job)
        if admission is Admission.FULL:
            cap = self.app.runtime.current().telegram.queue_cap
            self._notify(target, queue_full_text(cap))
        elif admission is Admission.CLOSED:
            log.info("not taking a message in %s: shutting down", job.chat.key)

    async def _stop(self, chat: ChatRef) -> str:
        outcome = await self.lanes.stop(chat.key)
        return stop_text(outcome.cancelled_running, outcome.dropped)

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error("error while handling a Telegram update", exc_info=context.error)

    # -- turns ---------------------------------------------------------------------------------

    async def _run_job(self, job: LaneJob) -> None:
        target = target_for_job(job)
        interval = self.app.runtime.current().telegram.typing_interval_seconds
        if job.command is not None and job.command.name != "compact":
            answer = await self.app.commands.run(job.chat, job.command, stop=self._stop)
            await self.replies.send_text(target, answer)
            return
        progress_target = ReplyTarget(target.chat_id, target.thread_id)

        async def notify(text: str) -> None:
            await self.replies.send_text(progress_target, text)

        async with self.replies.typing(target, interval):
            if job.command is not None:
                answer = await self.app.commands.run(job.chat, job.command, stop=self._stop)
                await self.replies.send_text(target, answer)
                return
            outcome = await self.app.assistant.handle_text(
                job.chat, job.text, message_refs=list(job.message_refs), notify=notify
            )
            if outcome is not None:
                await self.replies.send_reply(target, outcome.reply)

    def status_lines(self, chat: ChatRef) -> list[str]:
        if chat.channel != CHANNEL:
            return []
        config = self.app.runtime.current().telegram
        running = "a reply is running" if self.lanes.is_running(chat.key) else "idle"
        waiting = self.lanes.waiting(chat.key)
        return [
            f"Queue: {running}, {waiting} waiting "
            f"(mode {config.queue_mode}, cap {config.queue_cap})"
        ]

    def _keep_unanswered(self, jobs: list[LaneJob]) -> None:
        """Queued messages that never got a turn stay in their sessions, marked unanswered."""
        for job in jobs:
            session = self.app.assistant.session(job.chat)
            session.messages.append(
                {
                    "role": "user",
                    "content": job.text,
                    "at": to_iso(time.time()),
                    "refs": list(job.message_refs),
                    "unanswered": True,
                }
            )
            self.app.sessions.save(session)
        log.warning("kept %d queued messages unanswered in their sessions", len(jobs))


def channel_of(application: Application) -> TelegramChannel:
    channel = application.bot_data[CHANNEL_KEY]
    assert isinstance(channel, TelegramChannel)
    return channel


def build_telegram_application(
    app: App, settings: Settings, *, rate_limiter: BaseRateLimiter | None = None
) -> Application:
    """The PTB Application of mnemobot; start it with `bot.telegram.run.serve_telegram`."""
    if settings.telegram_bot_token is None:
        raise ValueError("TELEGRAM_BOT_TOKEN is not set")
    builder = (
        ApplicationBuilder()
        .token(settings.telegram_bot_token.get_secret_value())
        .base_url(settings.telegram_api_base_url)
        .rate_limiter(rate_limiter or AIORateLimiter(max_retries=RATE_LIMIT_RETRIES))
        .defaults(
            Defaults(
                allow_sending_without_reply=True,
                # An answer that mentions a URL should not grow a big preview card.
                link_preview_options=LinkPreviewOptions(is_disabled=True),
            )
        )
        # One update at a time keeps arrival order; the handlers never wait on a turn.
        .concurrent_updates(False)
        # One long poll at a time: PTB's own (httpx) request is cheap enough there. PTB
        # accepts these only before `.request(...)`.
        .get_updates_connect_timeout(CONNECT_TIMEOUT_SECONDS)
        .get_updates_read_timeout(READ_TIMEOUT_SECONDS)
        .get_updates_write_timeout(WRITE_TIMEOUT_SECONDS)
        # Sends (replies, typing) go through aiohttp: a fraction of httpx's CPU per call.
        .request(
            AiohttpRequest(
                connection_pool_size=CONNECTION_POOL_SIZE,
                pool_timeout=POOL_TIMEOUT_SECONDS,
                connect_timeout=CONNECT_TIMEOUT_SECONDS,
                read_timeout=READ_TIMEOUT_SECONDS,
                write_timeout=WRITE_TIMEOUT_SECONDS,
            )
        )
    )
    application = builder.build()
    channel = TelegramChannel(app, settings, application)
    application.bot_data[CHANNEL_KEY] = channel
    application.post_init = channel.post_init
    application.add_handler(TypeHandler(Update, channel.drop_duplicates), group=-1)
    application.add_handler(MessageHandler(filters.UpdateType.MESSAGE, channel.on_message))
    application.add_error_handler(channel.on_error)
    return application
