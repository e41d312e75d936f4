"""The Telegram channel: a python-telegram-bot Application wired to mnemobot's pipeline.

PTB hands us updates one at a time (`concurrent_updates` off), and every handler returns
after a few microseconds of bookkeeping: messages go into per-chat lanes that run turns in
the background, so `/status` and `/stop` are answered while a turn of the same chat runs,
and arrival order is the order in which the lanes see messages.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

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
    Updater,
    filters,
)

from bot.app import App
from bot.channels.dispatch import ChatDispatcher
from bot.channels.lanes import LaneJob
from bot.commands import COMMANDS, parse_command
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
from bot.telegram.config import TelegramConfig
from bot.telegram.refusals import RefusalMemory, refusals_path
from bot.telegram.replies import ReplySender, ReplyTarget
from config.settings import Settings
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

# Starts receiving updates (long polling or a webhook) once the bot is initialized.
UpdatesStarter = Callable[[Updater], Awaitable[None]]

ONLY_TEXT = (
    "I can only read text for now. Please write your message as text "
    "(a caption on a photo or file works too)."
)


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


def target_for_job(job: LaneJob) -> ReplyTarget:
    return ReplyTarget(
        chat_id=int(job.chat.chat_id),
        thread_id=int(job.chat.thread_id) if job.chat.thread_id else None,
        reply_to_message_id=job.reply_to_message_id,
    )


class TelegramChannel:
    """Per-application state: bot identity, update de-duplication, replies; lanes shared."""

    name = CHANNEL

    def __init__(
        self,
        app: App,
        settings: Settings,
        application: Application,
        start_updates: UpdatesStarter,
    ) -> None:
        self.app = app
        self.application = application
        self.allowed = settings.telegram_allowed_users
        self.replies = ReplySender(application.bot)
        self.dispatcher = ChatDispatcher(app, self, self.config)
        self.identity: BotIdentity | None = None
        self.refusals = RefusalMemory(refusals_path(app.paths.root))
        self._start_updates = start_updates
        self._seen_ids: set[int] = set()
        self._seen_order: deque[int] = deque()

    def config(self) -> TelegramConfig:
        return self.app.runtime.current().section(CHANNEL, TelegramConfig)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, say who we are, start receiving updates (polling or webhook)."""
        application = self.application
        await application.initialize()
        # run_polling/run_webhook would call post_init; we drive the lifecycle ourselves to
        # control the shutdown, so we call it too.
        if application.post_init is not None:
            await application.post_init(application)
        assert application.updater is not None
        await self._start_updates(application.updater)
        await application.start()

    async def stop(self, grace_seconds: float) -> None:
        """Stop taking updates, finish (or cancel) running turns and sends, disconnect.

        Safe after a start that failed half-way.
        """
        application = self.application
        if application.updater is not None and application.updater.running:
            await application.updater.stop()
        if application.running:
            await application.stop()
        await self.dispatcher.shutdown(grace_seconds)
        await application.shutdown()

    async def post_init(self, application: Application) -> None:
        me = await application.bot.get_me()
        self.identity = BotIdentity(user_id=me.id, username=me.username or "")
        await application.bot.set_my_commands(
            [BotCommand(spec.name, spec.description) for spec in COMMANDS]
        )
        log.info("Telegram bot @%s ready; allowed users: %s", me.username, self.allowed.describe())

    # -- sending ---------------------------------------------------------------------------------

    async def send_text(self, job: LaneJob, text: str) -> None:
        await self.replies.send_text(target_for_job(job), text)

    async def send_reply(self, job: LaneJob, markdown: str) -> None:
        await self.replies.send_reply(target_for_job(job), markdown)

    def working(self, job: LaneJob) -> AbstractAsyncContextManager[object]:
        return self.replies.typing(target_for_job(job), self.config().typing_interval_seconds)

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
        chat = chat_ref_for(message)
        quote = message.message_id if message.chat.type in GROUP_TYPES else None
        if verdict is Verdict.REFUSE:
            user_id = message.from_user.id if message.from_user else 0
            log.info("refused user %s in chat %s", user_id, message.chat.id)
            if not await self.refusals.claim(user_id):
                return  # told already today
            self.dispatcher.notify(
                LaneJob(chat, "", reply_to_message_id=quote), refusal_text(user_id)
            )
            return
        text = message_text(message)
        if text is None or not text.strip():
            self.dispatcher.notify(LaneJob(chat, "", reply_to_message_id=quote), ONLY_TEXT)
            return
        command = parse_command(text, self.identity.username)
        if command is None and message.chat.type in GROUP_TYPES:
            text = without_bot_mention(text, self.identity) or text
        job = LaneJob(
            chat=chat,
            text=text,
            message_refs=(f"tg:{message.message_id}",) if command is None else (),
            reply_to_message_id=quote,
            command=command,
        )
        await self.dispatcher.receive(job)

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error("error while handling a Telegram update", exc_info=context.error)


def channel_of(application: Application) -> TelegramChannel:
    channel = application.bot_data[CHANNEL_KEY]
    assert isinstance(channel, TelegramChannel)
    return channel


def build_telegram_application(
    app: App,
    settings: Settings,
    *,
    start_updates: UpdatesStarter,
    rate_limiter: BaseRateLimiter | None = None,
) -> Application:
    """The PTB Application of mnemobot; `channel_of(application).start()` starts it."""
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
    channel = TelegramChannel(app, settings, application, start_updates)
    application.bot_data[CHANNEL_KEY] = channel
    application.post_init = channel.post_init
    application.add_handler(TypeHandler(Update, channel.drop_duplicates), group=-1)
    application.add_handler(MessageHandler(filters.UpdateType.MESSAGE, channel.on_message))
    application.add_error_handler(channel.on_error)
    return application
