"""The Telegram channel: updates kept durably, answered in per-chat lanes, replies via the outbox.

Updates come from an `UpdateSource` (long polling or the webhook server) and are kept in the
durable inbox before Telegram is told (see `bot.channels.telegram.intake`). Each is then handled in
arrival order, in microseconds: commands like `/status` and `/stop` are answered on the
spot, messages go into their chat's lane (see `bot.channels`). Every answer goes into the
durable outbox, which delivers it in order per chat and keeps retrying through outages; a
message's inbox entry is marked done once its answer is in the outbox.

With replicas on Redis (`BOT_REDIS_URL`), the inbox is in Redis and shared: an update is
claimed once across replicas and answered by the replica holding its chat's lease (see
`bot.delivery.redis_ingress`); each replica keeps its own outbox file, whose answers go
out once their messages are marked answered in Redis (`answering_for`), so a replica that
takes over a dead one's chat never answers again what the dead one delivered.

python-telegram-bot provides the Bot (requests, rate limiter, defaults: `application`); its
Updater and handler machinery are not used, because they acknowledge updates before they
are kept and stop on one they cannot parse.

About 520 lines, longer than our modules should be: what is left here is the channel's
wiring and the callbacks its parts call (intake, lanes, outbox, previews, erasure); each
part's rules live in a module of its own (`access`, `answer_ids`, `inbound`, `intake`,
`media_turn`, `preview`, `replies`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace

from telegram import BotCommand, Message, Update
from telegram.error import InvalidToken, TelegramError
from telegram.ext import Application

from mnemobot.bot.channels.base import ChannelHost, PreparedTurn
from mnemobot.bot.channels.dispatch import ChatDispatcher
from mnemobot.bot.channels.lanes import (
    CommandJob,
    EditJob,
    LaneJob,
    LaneRules,
    MessageJob,
    firing_job,
)
from mnemobot.bot.channels.telegram.access import (
    CHANNEL,
    GROUP_TYPES,
    BotIdentity,
    Verdict,
    allowed_with_operators,
    chat_ref_for,
    message_text,
    refusal_text,
    sender_of,
    set_by_allowed_user,
    verdict_for,
    without_bot_mention,
)
from mnemobot.bot.channels.telegram.answer_ids import answering_for, outbox_ids, target_for_job
from mnemobot.bot.channels.telegram.config import DEFAULT_TIMING, TelegramConfig, TelegramTiming
from mnemobot.bot.channels.telegram.confirm_buttons import TelegramConfirmButtons
from mnemobot.bot.channels.telegram.inbound import Inbound, inbound_for
from mnemobot.bot.channels.telegram.intake import RedisTelegramIntake, TelegramIntake
from mnemobot.bot.channels.telegram.media_turn import TelegramMediaTurns, retry_job
from mnemobot.bot.channels.telegram.member_roles import TelegramRoles
from mnemobot.bot.channels.telegram.migration import ChatMigration, migrated_chat_ids
from mnemobot.bot.channels.telegram.preview import (
    PreviewJournal,
    ShownPreviews,
    TelegramPreview,
    preview_method,
)
from mnemobot.bot.channels.telegram.redis_previews import RedisShownPreviews
from mnemobot.bot.channels.telegram.refusals import RefusalMemory, refusals_path
from mnemobot.bot.channels.telegram.replies import (
    TelegramDelivery,
    as_edits,
    document_message,
    long_reply_messages,
    text_messages,
    typing,
)
from mnemobot.bot.channels.telegram.sources import UpdateSource
from mnemobot.bot.delivery.journal import DurableQueue, QueuedEntry
from mnemobot.bot.delivery.journal_redaction import JournalKeeper, ReplicaHandoff
from mnemobot.bot.delivery.outbox import Answering, Outbox
from mnemobot.bot.delivery.redis_ingress import RedisInbox
from mnemobot.bot.delivery.replicas import Replicas
from mnemobot.bot.i18n import TRANSLATED, words_for
from mnemobot.bot.schedule.tasks import Firing
from mnemobot.bot.turn.commands import COMMANDS, Attachment, parse_command
from mnemobot.bot.turn.erasure import ErasureTarget
from mnemobot.config.settings import Settings
from mnemobot.systems.core.context import ChatRef

log = logging.getLogger(__name__)

# At start-up, the Bot API is retried with growing pauses up to this long each.
STARTUP_RETRY_MAX_SECONDS = 30.0
# At shutdown, replies still in the outbox get this long; the rest go out on the next start.
OUTBOX_CLOSE_SECONDS = 2.0


class TelegramChannel:
    """Bot identity, intake, lanes and outbox of one bot token."""

    name = CHANNEL

    def __init__(
        self,
        app: ChannelHost,
        settings: Settings,
        application: Application,
        source: UpdateSource,
        replicas: Replicas | None = None,
        timing: TelegramTiming = DEFAULT_TIMING,
    ) -> None:
        self.app = app
        self.application = application
        self.timing = timing
        self.allowed = allowed_with_operators(settings)
        self.source = source
        delivery = app.paths.delivery
        self.intake: TelegramIntake
        self.preview_journal: ShownPreviews
        # The name of this replica, which answers carry (None: no replicas).
        self.replica_id: str | None = None
        if replicas is None:
            self.intake = TelegramIntake(
                delivery / "telegram-inbox.jsonl", application.bot, self.on_update, clock=app.clock
            )
            outbox_path = delivery / "telegram-outbox.jsonl"
            self.preview_journal = PreviewJournal(
                delivery / "telegram-previews.jsonl", clock=app.clock
            )
        else:
            config = self.config()
            inbox = RedisInbox(
                replicas.coordination,
                replicas.leases,
                lease_seconds=config.lease_seconds,
                sweep_seconds=timing.sweep_seconds,
                outage=replicas.outage,
            )
            self.intake = RedisTelegramIntake(
                inbox, application.bot, self.on_update, clock=app.clock
            )
            # Each replica's undelivered replies are its own: one journal per replica name.
            outbox_path = delivery / f"telegram-outbox-{settings.replica_id}.jsonl"
            self.replica_id = settings.replica_id
            # In Redis: a chat's message answered again on another replica after a crash
            # edits the preview the dead one showed.
            self.preview_journal = RedisShownPreviews(replicas)
        self.intake.handle_firing = self.on_firing
        sender = TelegramDelivery(application.bot, on_migrated=self._migrated)
        gate = self.intake.redis_inbox if isinstance(self.intake, RedisTelegramIntake) else None
        self.outbox = Outbox(outbox_path, sender.deliver, clock=app.clock, gate=gate)
        # The preview of the reply being written, per chat (one turn runs per chat).
        self._previews: dict[str, TelegramPreview] = {}
        # Receipts of answers whose previews are forgotten once they are marked answered.
        self._previews_to_settle: set[tuple[str, ...]] = set()
        self.dispatcher = ChatDispatcher(
            app.assistant,
            app.commands,
            self,
            self.lane_rules,
            answered=self._answered,
            confirmations=app.confirmations,
            firings=app.schedule.runner if app.schedule is not None else None,
        )
        roles = TelegramRoles(application.bot, settings.operators)
        self.buttons = TelegramConfirmButtons(
            application.bot, app.confirmations, self.outbox, is_admin=roles.is_admin
        )
        app.confirmations.register(CHANNEL, self.buttons)
        self.migration = ChatMigration(app, self.dispatcher)
        self.identity: BotIdentity | None = None
        self.media = TelegramMediaTurns(application.bot, app)
        self.refusals = RefusalMemory(refusals_path(app.paths.root), app.clock)
        app.erasure.add_step(self._erase_journals)
        # Forgetting a text redacts it from the journals too (their entries stay); another
        # replica's outbox is handed the texts, and this one looks for what it is handed.
        self.handoff = (
            ReplicaHandoff(delivery, self.replica_id, "telegram-outbox-")
            if self.replica_id
            else None
        )
        self.journal_keeper = JournalKeeper(self._journals, app.paths.root, handoff=self.handoff)
        app.memory.forget.add_keeper(self.journal_keeper)
        self._handed: asyncio.Task[None] | None = None
        app.commands.permissions.register(CHANNEL, roles)

    def config(self) -> TelegramConfig:
        return self.app.runtime.current().section(CHANNEL, TelegramConfig)

    def lane_rules(self) -> LaneRules:
        return self.timing.lane_rules(self.config().queue_mode)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Reach the Bot API (retrying while it is unreachable), answer what an earlier run
        left unanswered, then start taking updates."""
        await self._connect()
        await self.outbox.start()
        await self.intake.replay()
        await self.source.start(self.application, self.intake.keep)
        if self.app.schedule is not None:
            self.app.schedule.scheduler.attach(CHANNEL, self.keep_firings)
        if self.handoff is not None:
            self._handed = asyncio.create_task(self.handoff.receive_forever(self.journal_keeper))

    async def _connect(self) -> None:
        pause = 1.0
        while True:
            try:
                # Initializing the bot asks Telegram who it is (getMe).
                await self.application.initialize()
                me = self.application.bot.bot
                break
            except InvalidToken:
                # initialize() opened the HTTP sessions before Telegram said no: close them.
                await self.application.bot.shutdown()
                await self.application.bot.request.shutdown()
                raise
            except (TelegramError, OSError) as exc:
                log.warning(
                    "waiting for the Telegram Bot API (%s); trying again in %.0f s", exc, pause
                )
                await asyncio.sleep(pause)
                pause = min(pause * 2, STARTUP_RETRY_MAX_SECONDS)
        self.identity = BotIdentity(user_id=me.id, username=me.username or "")
        # The menu in each language we have words for; Telegram shows a user the one of
        # their app's language, and the default (English) to everyone else.
        for language in (None, *TRANSLATED):
            words = words_for(language)
            await self.application.bot.set_my_commands(
                [BotCommand(spec.name, words.gettext(spec.description)) for spec in COMMANDS],
                language_code=language,
            )
        log.info("Telegram bot @%s ready; allowed users: %s", me.username, self.allowed.describe())

    async def stop(self, grace_seconds: float) -> None:
        """Take no new updates, finish (or cancel) running turns, flush the outbox a little,
        disconnect. What is left stays in the inbox and outbox for the next start.

        Safe after a start that failed half-way.
        """
        try:
            if self._handed is not None:
                self._handed.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._handed
            if self.app.schedule is not None:
                await self.app.schedule.scheduler.detach(CHANNEL)
            await self.source.stop()
            await self.dispatcher.shutdown(grace_seconds)
            await self.intake.close()
            await self.outbox.close(OUTBOX_CLOSE_SECONDS)
        finally:
            await self.application.shutdown()
            # Stopped before Telegram ever answered: the application was never initialized
            # and leaves the connection pool the first try opened; close it ourselves.
            await self.application.bot.request.shutdown()

    # -- sending ---------------------------------------------------------------------------------

    def _answering(self, job: LaneJob) -> Answering | None:
        return None if self.replica_id is None else answering_for(job, self.replica_id)

    async def send_text(self, job: LaneJob, text: str) -> None:
        messages = text_messages(target_for_job(job), text)
        await self.outbox.put(
            job.chat.key,
            messages,
            ids=outbox_ids(job, "note", text, len(messages)),
            answering=self._answering(job),
        )

    async def send_reply(self, job: LaneJob, markdown: str) -> None:
        """The reply, through the outbox; it replaces the chat's preview, if one is shown."""
        preview = self._previews.pop(job.chat.key, None)
        if preview is not None:
            preview_ids = await preview.close()
        else:
            # Shown before a crash, answered now without a new preview.
            _, preview_ids = await self.preview_journal.shown(job.receipts)
        messages = long_reply_messages(
            target_for_job(job), markdown, self.timing.max_reply_messages
        )
        messages = as_edits(messages, preview_ids)
        await self.outbox.put(
            job.chat.key,
            messages,
            ids=outbox_ids(job, "reply", markdown, len(messages)),
            answering=self._answering(job),
        )
        if preview_ids and self.replica_id is not None:
            # Until the job is marked answered, a replica that takes the chat over must
            # still find the preview to edit.
            self._previews_to_settle.add(job.receipts)
        elif preview_ids:
            await self.preview_journal.settle(job.receipts)

    def reply_stream(self, job: LaneJob) -> TelegramPreview | None:
        """Where the reply to `job` shows while it is written, or None (see `preview`)."""
        config = self.config()
        method = preview_method(config.streaming, job.chat.is_group)
        if method is None:
            return None
        target = target_for_job(job)
        preview = TelegramPreview(
            self.application.bot,
            chat_id=target.chat_id,
            thread_id=target.thread_id,
            quote=target.reply_to_message_id,
            method=method,
            interval_seconds=self.timing.stream_edit_seconds,
            journal=self.preview_journal,
            key=job.chat.key,
            receipts=job.receipts,
            replies_waiting=lambda: self.outbox.waiting(job.chat.key) > 0,
        )
        self._previews[job.chat.key] = preview
        return preview

    async def close_stream(self, job: LaneJob, *, answered: bool) -> None:
        """The turn of `job` ended without `send_reply` (a failure, a shutdown): no more
        previews. `answered`: the message will not come back, so its preview is forgotten;
        else a restart answers it by editing the preview."""
        preview = self._previews.pop(job.chat.key, None)
        if preview is not None:
            await preview.close()
        if answered and job.receipts:
            await self.preview_journal.settle(job.receipts)

    async def send_document(self, job: LaneJob, attachment: Attachment, caption: str) -> None:
        """A file (e.g. /export's zip) as a Telegram document, through the outbox like text."""
        if attachment.path is None:
            await self.send_text(job, caption)
            return
        message = document_message(
            target_for_job(job), attachment.path, attachment.filename, caption
        )
        ids = outbox_ids(job, "document", attachment.filename, 1)
        await self.outbox.put(job.chat.key, [message], ids=ids, answering=self._answering(job))

    async def prepare_turn(self, job: MessageJob) -> PreparedTurn:
        return await self.media.prepare(job)

    def working(self, job: LaneJob) -> AbstractAsyncContextManager[object]:
        preview = self._previews.get(job.chat.key)
        return typing(
            self.application.bot,
            target_for_job(job),
            self.timing.typing_interval_seconds,
            self.timing.typing_delay_seconds,
            # "typing…" until the reply's first text shows.
            until=preview.first_text if preview is not None else None,
        )

    def _journals(self) -> list[DurableQueue]:
        """The journals this process writes that quote what chats said."""
        queues = [self.outbox.queue]
        if isinstance(self.preview_journal, PreviewJournal):
            queues.append(self.preview_journal.queue)
        if not isinstance(self.intake, RedisTelegramIntake):
            # With replicas the inbox is in Redis, which drops an entry once it is done.
            queues.insert(0, self.intake.inbox)
        return queues

    async def _erase_journals(self, target: ErasureTarget) -> list[str]:
        """Erasure: the finished entries of the chat's messages and replies in the inbox
        and outbox journals (the ones still owed an answer or a delivery stay), and the
        notes /retry would read again went with the chat's session)."""
        removed = []
        for queue in self._journals():
            count = await asyncio.to_thread(queue.purge, target.holds)
            if count:
                shown = queue.path.relative_to(self.app.paths.root)
                removed.append(f"{shown}: {count} finished entries of this chat")
        return removed

    async def _answered(self, jobs: Sequence[LaneJob]) -> None:
        if self.replica_id is None:
            await self.intake.done([receipt for job in jobs for receipt in job.receipts])
            return
        for job in jobs:
            answering = self._answering(job)
            name = answering.name if answering is not None else ""
            marked = await self.intake.done(job.receipts, answer=name)
            settle = job.receipts in self._previews_to_settle
            self._previews_to_settle.discard(job.receipts)
            if not marked:
                continue  # answered again by the chat's holder, maybe on the same preview
            # The mark written, the job's replies may go out (see `answering_for`).
            if answering is not None:
                self.outbox.answered(job.chat.key, name)
            if settle:
                await self.preview_journal.settle(job.receipts)

    # -- updates ---------------------------------------------------------------------------------

    async def on_update(self, update: Update, receipt: str) -> None:
        """Handle one kept update; `receipt` is its inbox id, done once it is answered."""
        if update.callback_query is not None:
            self.buttons.on_press(update.callback_query)
            await self.intake.done([receipt])
            return
        message = update.message
        if update.edited_message is not None and self.identity is not None:
            await self._on_edit(update.edited_message, receipt)
            return
        if message is None or self.identity is None:
            await self.intake.done([receipt])
            return
        moved = migrated_chat_ids(message)
        if moved is not None:
            # Whoever upgraded the group, the chat's memory and conversation follow it.
            self.migration.start(*moved)
            await self.intake.done([receipt])
            return
        verdict = verdict_for(message, self.identity, self.allowed)
        if verdict is Verdict.IGNORE:
            await self.intake.done([receipt])
            return
        chat = chat_ref_for(message, self.identity.user_id)
        quote = message.message_id if message.chat.type in GROUP_TYPES else None
        notice = MessageJob(chat, "", reply_to_message_id=quote, receipts=(receipt,))
        if verdict is Verdict.REFUSE:
            sender = sender_of(message)
            assert sender is not None  # nobody's message is ignored, not refused
            log.info("refused user %s in chat %s", sender.id, message.chat.id)
            if not await self.refusals.claim(sender.id):
                await self.intake.done([receipt])
                return  # told already today
            self.dispatcher.notify(notice, refusal_text(sender), answered=True)
            return
        text = message_text(message)
        command = parse_command(text, self.identity.username) if text else None
        if command is not None and command.name == "retry":
            await self.dispatcher.receive(retry_job(chat, message.message_id, quote, receipt))
            return
        if command is None and text and message.chat.type in GROUP_TYPES:
            text = without_bot_mention(text, self.identity) or text
        inbound = inbound_for(message, text)
        if command is None and not inbound.says_something:
            # A service message (a pin, an auto-delete timer, a member joining): nothing
            # was said to the bot, so nothing is answered.
            await self.intake.done([receipt])
            return
        job: LaneJob
        if command is not None:
            job = CommandJob(
                chat, text or "", command, reply_to_message_id=quote, receipts=(receipt,)
            )
        else:
            job = MessageJob(
                chat=chat,
                text=text or "",
                message_refs=(f"tg:{message.message_id}",),
                reply_to_message_id=quote,
                receipts=(receipt,),
                parts=(inbound,),
                # A forwarded batch, an album or a cut paste arrives as many updates: one
                # turn for all.
                gather=inbound.comes_with_more,
                typed=inbound.file is None and inbound.forward is None,
            )
        await self.dispatcher.receive(job)

    async def _on_edit(self, message: Message, receipt: str) -> None:
        """An edited message: a turn that has not run yet takes the new wording; for one
        that ran, memory is updated in the chat's lane (no reply either way)."""
        assert self.identity is not None
        text = message_text(message)
        if not text or verdict_for(message, self.identity, self.allowed) is not Verdict.SERVE:
            await self.intake.done([receipt])
            return
        if message.chat.type in GROUP_TYPES:
            text = without_bot_mention(text, self.identity) or text
        chat = chat_ref_for(message, self.identity.user_id)
        ref = f"tg:{message.message_id}"
        edited = inbound_for(message, text)

        def new_wording(part: object) -> object:
            same = isinstance(part, Inbound) and part.message_id == edited.message_id
            return replace(part, text=edited.text) if same else part  # type: ignore[type-var]

        if self.dispatcher.lanes.replace_waiting(chat.key, ref, new_wording, text):
            await self.intake.done([receipt])
            return
        job = EditJob(chat, text, ref, receipts=(receipt,))
        await self.dispatcher.receive(job)

    async def keep_firings(self, firings: Sequence[Firing]) -> None:
        """Due scheduled tasks: kept in the inbox (under their group's inbox key, like its
        messages), then each waits in its chat's lane."""
        now = self.app.clock()
        entries = [
            QueuedEntry(
                id=f.entry_id, key=f"{CHANNEL}:{f.task.chat.chat_id}", data=f.to_json(), at=now
            )
            for f in firings
        ]
        await self.intake.keep_firings(entries)

    async def on_firing(self, entry: QueuedEntry) -> None:
        job = firing_job(Firing.from_json(entry.data), receipt=entry.id)
        if not set_by_allowed_user(job.chat, self.allowed):
            log.info("not firing %s: user %s is no longer allowed", entry.id, job.chat.user_id)
            await self.intake.done([entry.id])
            return
        await self.dispatcher.receive(job)

    def _migrated(self, old_chat_id: int, new_chat_id: int) -> None:
        self.migration.start(old_chat_id, new_chat_id)

    def status_lines(self, chat: ChatRef) -> list[str]:
        waiting = self.outbox.waiting(chat.key)
        if not waiting:
            return []
        words = words_for(chat.language)
        return [words.gettext("Replies waiting for Telegram: {count}", count=words.number(waiting))]
