"""The Assistant: one turn of one chat, from user text to reply, through the pipeline.

Channels (console, Telegram) own ordering and queueing; the Assistant owns the turn: it
keeps the user's message first (saved before anything can fail), runs the pipeline, and
always produces a reply, either the model's answer or a short apology.

Longer than a module of ours should be: it is one lifecycle (hold the chat, keep the
message, run the pipeline, answer), and each step reads and writes the same session under
the same locks; its parts that stand alone already live beside it (`received`,
`stopped_turn`, `speaker_rights`, `bot_move`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mnemobot.base.clock import SYSTEM_CLOCK, Clock, from_iso, to_iso
from mnemobot.bot.i18n import N_, Words, words_for
from mnemobot.bot.llm.model_gate import ModelGate
from mnemobot.bot.tools.clock_tool import chat_zone_name
from mnemobot.bot.turn.bot_move import adopt_chat_numbering
from mnemobot.bot.turn.received import (
    find_containing,
    find_cut_short,
    find_received,
    retire_other_numbering,
)
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.config.zones import local_time, zone_or_local
from mnemobot.conversation.session import (
    SET_ASIDE_KEY,
    AgentSession,
    Message,
    SessionStore,
    shown_in_chat,
    valid_unicode,
)
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.systems.core.context import ChatRef, TurnContext, sole_speaker
from mnemobot.systems.core.llm import LLMFailureKind
from mnemobot.systems.core.pipeline import Pipeline
from mnemobot.systems.core.reply_stream import ReplyStream
from mnemobot.systems.core.turn_media import (
    NO_MEDIA,
    TurnMedia,
    kept_parts,
    own_words,
    parts_to_keep,
    turn_text,
)
from mnemobot.systems.model_call.prompt_usage import INPUT_TOKENS_KEY

log = logging.getLogger(__name__)

# In English: `Words.gettext` gives them in the reader's language.
STORAGE_FAILED_TEXT = N_(
    "Sorry, I could not save this conversation (the bot's storage is failing); "
    "please try again later."
)
STORAGE_NOTE = N_("(I could not save this to memory: the bot's storage is failing.)")
# What a chat user is told of a failed model call (`LLMError.user_text`, in their words).
_LLM_FAILURES = {
    LLMFailureKind.CONTEXT_OVERFLOW: N_("the conversation no longer fits the model's context"),
    LLMFailureKind.RATE_LIMITED: N_("the model is rate-limited right now"),
    LLMFailureKind.UNAVAILABLE: N_("the model is unavailable right now"),
    LLMFailureKind.TIMEOUT: N_("the model did not answer in time"),
    LLMFailureKind.AUTH: N_("the model is not available right now"),
    LLMFailureKind.BAD_REQUEST: N_("the model rejected the request"),
}


def llm_failure_text(words: Words, kind: LLMFailureKind) -> str:
    """ "the model did not answer in time", in the reader's words."""
    return words.gettext(_LLM_FAILURES[kind])


@dataclass(slots=True)
class TurnOutcome:
    reply: str
    # None when the turn never started (the session could not be stored).
    ctx: TurnContext | None
    answered: bool
    # The message could not be stored, so it was not taken: nothing of it is kept, and
    # the same message may be handed in again once storage works.
    storage_failed: bool = False


def set_aside_note(file_name: str, words: Words | None = None) -> str:
    """Told once, in the first reply after an unreadable session was replaced by a new one."""
    return (words or words_for(None)).gettext(
        "(I could not read our earlier conversation, so I set it aside as {file} and "
        "started a new one. My memory of what you told me is unaffected.)",
        file=file_name,
    )


@dataclass(slots=True)
class ChatActivity:
    """Per-chat facts for /status that are not worth persisting."""

    last_pack_tokens: int | None = None
    last_turn_at: float | None = None
    extras: dict[str, object] = field(default_factory=dict)


def apology_for(ctx: TurnContext) -> str:
    words = words_for(ctx.chat.language)
    if ctx.llm_error is not None:
        if ctx.llm_error.kind is LLMFailureKind.CONTEXT_OVERFLOW:
            # Suggest only what can help: /compact 2 when it has more than two messages to
            # work on, /new when there is an earlier conversation to clear.
            count = sum(1 for m in ctx.session.messages if m.get("role") != "system")
            if count > 2:
                return words.gettext(
                    "Sorry, this conversation no longer fits the model's context, even after "
                    "compacting. Your message was kept; try /compact 2 or /new."
                )
            if count > 1:
                return words.gettext(
                    "Sorry, this conversation no longer fits the model's context, even after "
                    "compacting. Your message was kept; try /new, or send a shorter message."
                )
            return words.gettext(
                "Sorry, this conversation no longer fits the model's context, even after "
                "compacting. Your message was kept; a shorter message, or a model with a "
                "larger context window, would help."
            )
        return words.gettext(
            "Sorry, {what}. Your message was kept; send another message to carry on.",
            what=llm_failure_text(words, ctx.llm_error.kind),
        )
    failed = ", ".join(sorted({f.system for f in ctx.failures}))
    if not failed:
        return words.gettext(
            "Sorry, something went wrong. Your message was kept; send another message to carry on."
        )
    # The failed systems by their names (ToolLoop...): the operator's log says more.
    return words.gettext(
        "Sorry, something went wrong ({failed} failed). Your message was kept; send another "
        "message to carry on.",
        failed=failed,
    )


def with_reply_notes(ctx: TurnContext) -> None:
    """Add the turn's reply notes the answer does not already hold, in the session too."""
    if ctx.reply is None:
        return
    missing = [note for note in ctx.reply_notes if note not in ctx.reply]
    if not missing:
        return
    answer = ctx.reply
    ctx.reply = "\n\n".join([answer, *missing])
    for message in reversed(ctx.new_messages):
        if message.get("role") == "assistant" and message.get("content") == answer:
            message["content"] = ctx.reply
            break


def _user_message(
    chat: ChatRef, text: str, refs: list[str], media: TurnMedia, at: float
) -> Message:
    message: Message = {"role": "user", "content": text, "at": to_iso(at)}
    if refs:
        message["refs"] = refs
    if chat.user_name:
        message["from"] = chat.user_name
    parts = parts_to_keep(media.parts)
    if parts is not None:
        # An edit of one of its messages changes that message's words only.
        message["parts"] = parts
    if media.tags:
        message["tags"] = list(media.tags)
    return message


class Assistant:
    def __init__(
        self,
        *,
        settings: Settings,
        paths: WorkspacePaths,
        runtime: RuntimeConfigStore,
        sessions: SessionStore,
        pipeline: Pipeline,
        scope_for: Callable[[ChatRef, RuntimeConfig], str],
        clock: Clock = SYSTEM_CLOCK,
        record: MemoryRecord | None = None,
        gate: ModelGate | None = None,
    ) -> None:
        """`clock` gives the time of each turn (seconds since the epoch): a replay or a bench
        passes its own, so turns can be minutes apart as in a real chat. `gate`: the model
        client's, told when a turn is in flight (background model calls wait)."""
        self.settings = settings
        self.clock = clock
        self.paths = paths
        self.runtime = runtime
        self.sessions = sessions
        self.pipeline = pipeline
        self.scope_for = scope_for
        # Where an edit of an answered message is told (`revise`).
        self.record = record
        self.activity: dict[str, ChatActivity] = {}
        self.gate = gate or ModelGate(lambda: 0)
        self._locks: dict[str, asyncio.Lock] = {}
        self.started_at = clock()
        # Sessions cannot be stored right now (logged once per outage).
        self._storage_failing = False

    def config(self) -> RuntimeConfig:
        return self.runtime.current()

    def model_name(self, config: RuntimeConfig | None = None) -> str:
        config = config or self.config()
        return config.llm.chat_model_name(self.settings.bot_model)

    def lock_for(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def session(self, chat: ChatRef) -> AgentSession:
        return self.sessions.get(chat.key)

    async def change_metadata(
        self, chat: ChatRef, change: Callable[[dict[str, Any]], bool]
    ) -> None:
        """Change the chat session's metadata under its lock and save it when `change`
        says it changed something: what a channel keeps for the chat across restarts and
        replicas beside the conversation (the note /retry reads again)."""
        async with self.lock_for(chat.key), self.sessions.exclusive(chat.key):
            session = self.sessions.get(chat.key)
            if change(session.metadata):
                await self.sessions.save_async(session)

    async def read_metadata(self, chat: ChatRef, read: Callable[[dict[str, Any]], None]) -> None:
        """Read the chat session's metadata under its lock (with replicas, as last saved by
        any of them)."""
        async with self.lock_for(chat.key), self.sessions.exclusive(chat.key):
            read(self.sessions.get(chat.key).metadata)

    def activity_for(self, chat: ChatRef) -> ChatActivity:
        found = self.activity.get(chat.key)
        if found is None:
            found = self.activity[chat.key] = ChatActivity()
        return found

    async def handle_text(
        self,
        chat: ChatRef,
        text: str,
        *,
        message_refs: list[str] | None = None,
        notify: Callable[[str], Awaitable[None]] | None = None,
        media: TurnMedia = NO_MEDIA,
        reply_stream: ReplyStream | None = None,
        scheduled: bool = False,
    ) -> TurnOutcome | None:
        """Run one turn; None for empty input (ignored, nothing stored). `media`: what the
        message carries besides its text (images, forwards, documents); `reply_stream`:
        where the channel shows the answer while it is written; `scheduled`: the text is a
        scheduled task's, written by no one in the chat."""
        text = valid_unicode(text).strip()
        if not text:
            return None
        try:
            # In flight once it holds its chat (not while queued behind the chat's turn
            # before it, which may wait on memory work): background model calls wait.
            async with (
                self.lock_for(chat.key),
                self.sessions.exclusive(chat.key),
                self.gate.turn(chat.key),
            ):
                outcome = await self._turn(
                    chat, text, message_refs or [], notify, media, reply_stream, scheduled
                )
        except OSError as exc:
            # A full disk, a read-only or vanished workspace: nothing the user can fix, so
            # one line for them and, once per outage, one for the operator.
            log.log(
                logging.DEBUG if self._storage_failing else logging.WARNING,
                "could not store the session of %s (%s); check the workspace's free space "
                "and permissions",
                chat.key,
                exc,
            )
            self._storage_failing = True
            return TurnOutcome(
                reply=words_for(chat.language).gettext(STORAGE_FAILED_TEXT),
                ctx=None,
                answered=False,
                storage_failed=True,
            )
        if self._storage_failing:
            log.info("sessions can be stored again")
            self._storage_failing = False
        return outcome

    async def _turn(
        self,
        chat: ChatRef,
        text: str,
        message_refs: list[str],
        notify: Callable[[str], Awaitable[None]] | None,
        media: TurnMedia = NO_MEDIA,
        reply_stream: ReplyStream | None = None,
        scheduled: bool = False,
    ) -> TurnOutcome:
        config = self.config()
        session = self.sessions.get(chat.key)
        retire_other_numbering(session.messages, session.metadata, chat.ref_numbering)
        set_aside = session.metadata.pop(SET_ASIDE_KEY, None)
        at = self.clock()
        # The chat's own zone when it set one (the schedule tool), else the configured one.
        now = local_time(at, chat_zone_name(session.metadata, config))
        ctx = TurnContext(
            chat=chat,
            session=session,
            user_text=text,
            config=config,
            now=now,
            model=self.model_name(config),
            scope=self.scope_for(chat, config),
            message_refs=message_refs,
            notify=notify,
            reply_stream=reply_stream,
            occurred_at=at,
            media=media,
        )
        if self.record is not None and config.memory.enabled:
            # Memory off records nothing, so a move meanwhile is renamed at the first turn
            # with it on.
            await adopt_chat_numbering(self.record, chat, ctx.scope, at, session.messages)
        earlier = find_received(session.messages, message_refs)
        if earlier is not None and earlier.answer is not None:
            # Answered before a crash cut the delivery short: the same answer, no new turn.
            log.info("message %s of %s was answered before; replying again", message_refs, chat.key)
            ctx.reply = earlier.answer
            return TurnOutcome(reply=earlier.answer, ctx=ctx, answered=True)
        if earlier is None:
            message = _user_message(chat, text, message_refs, media, at)
            if scheduled:
                message["scheduled"] = True
            await self._keep_message(session, message, message_refs)
            ctx.user_message = message
        else:
            ctx.user_message = session.messages[earlier.index]
            ctx.handed_again = True
        try:
            await self.pipeline.run(ctx)
            with_reply_notes(ctx)
        finally:
            # Saved on every exit, cancellation included, so nothing of the turn is lost; the
            # reply goes out only after this, so what the user reads is always on disk.
            await self.sessions.save_async(session)
            activity = self.activity_for(chat)
            activity.last_turn_at = self.clock()
            if ctx.memory_pack is not None:
                activity.last_pack_tokens = ctx.memory_pack.diagnostics.total_tokens
        answered = ctx.reply is not None
        reply = ctx.reply if ctx.reply is not None else apology_for(ctx)
        if not answered and ctx.reply_notes:
            reply = "\n\n".join([reply, *ctx.reply_notes])
        if ctx.llm_error is not None:
            error = ctx.llm_error
            status = f", HTTP {error.status}" if error.status else ""
            log.warning(
                "no answer in %s: %s%s: %s; %s",
                chat.key,
                error.kind.value,
                status,
                error.detail,
                error.operator_hint(),
            )
        if ctx.failures:
            log.info("turn in %s had failures: %s", chat.key, ctx.failures)
        for note in dict.fromkeys(ctx.notes):
            reply = f"{reply}\n\n({note})"
        words = words_for(chat.language)
        if ctx.memory_storage_failed:
            reply = f"{reply}\n\n{words.gettext(STORAGE_NOTE)}"
        if isinstance(set_aside, str):
            reply = f"{set_aside_note(set_aside, words)}\n\n{reply}"
        return TurnOutcome(reply=reply, ctx=ctx, answered=answered)

    async def _keep_message(self, session: AgentSession, message: Message, refs: list[str]) -> None:
        """Keep the turn's message before anything else can fail: a model outage never
        loses it. The write runs off the event loop, so other chats go on while it waits."""
        index = find_cut_short(session.messages, refs)
        replaced = session.messages[index] if index is not None else None
        if index is not None and replaced is not None:
            # A turn a crash cut short, handed over again merged with newer messages: it
            # goes on with their words too, from the tool calls it made (they stay done),
            # and its own words are not in the conversation twice.
            message["at"] = replaced.get("at", message["at"])
            session.messages[index] = message
        else:
            session.messages.append(message)
        try:
            await self.sessions.save_async(session)
        except OSError:
            # Not stored, so not taken: a later turn must not find it and answer it.
            if index is not None and replaced is not None:
                session.messages[index] = replaced
            elif session.messages and session.messages[-1] is message:
                session.messages.pop()
            raise

    async def revise(self, chat: ChatRef, ref: str, text: str) -> bool:
        """The user edited an answered message (`ref`): the conversation shows the new
        wording, and memory records it at the message's time and marks what it held of the
        old wording as earlier, so that is not recalled as current. A message merged with
        others into one turn (an album, a burst), or with a transcript or a description
        beside its caption, keeps all of that: only its own words change. False when the
        message is no longer in the conversation (then nothing is changed)."""
        text = valid_unicode(text).strip()
        if not text:
            return False
        config = self.config()
        async with self.lock_for(chat.key), self.sessions.exclusive(chat.key):
            session = self.sessions.get(chat.key)
            if retire_other_numbering(session.messages, session.metadata, chat.ref_numbering):
                await self.sessions.save_async(session)
            found = find_containing(session.messages, ref)
            if found is None:
                return False
            message = session.messages[found.index]
            parts = kept_parts(message.get("parts"))
            own = text
            if any(part.ref == ref for part in parts):
                parts = [part.with_text(text) if part.ref == ref else part for part in parts]
                message["parts"] = [part.to_json() for part in parts]
                text, own = turn_text(parts), own_words(parts)
            message["content"] = text
            message["edited"] = to_iso(self.clock())
            await self.sessions.save_async(session)
            zone = zone_or_local(chat_zone_name(session.metadata, config))
        if self.record is None or not config.memory.enabled or not own:
            return True
        scope = self.scope_for(chat, config)
        at = from_iso(str(message.get("at"))) if message.get("at") else self.clock()
        refs = [str(r) for r in message.get("refs") or [ref]]
        tags = message.get("tags")
        work = partial(
            self.record.revise_message,
            scope=scope,
            ref=ref,
            user_text=own,
            # The reply answered the old wording: kept with it, not with the new one.
            assistant_text="",
            at=at,
            now=self.clock(),
            config=config.memory,
            tz=zone,
            message_refs=refs,
            speaker=chat.user_name,
            sole_speaker=sole_speaker(chat, config),
            chat_key=chat.key,
            tags=[str(tag) for tag in tags] if isinstance(tags, list) else (),
        )
        try:
            await self.record.scopes.run(scope, work, write=True)
        except OSError as exc:
            log.warning("could not record an edit in %s's memory: %s", chat.key, exc)
        return True

    def reset_session(self, chat: ChatRef) -> int:
        """/new: clear the conversation, keep memory; returns how many messages were cleared,
        as the user counts them: theirs and the bot's replies, not tool calls or results."""
        # Read again if the file changed (maintenance redacts forgotten texts in it).
        self.sessions.refresh(chat.key)
        session = self.sessions.get(chat.key)
        cleared = sum(1 for message in session.messages if shown_in_chat(message))
        if session.messages:
            # The raw conversation stays searchable in the chat's append-only log.
            self.sessions.append_offload(chat.key, session.messages)
        session.messages.clear()
        session.state.clear()
        session.metadata.pop(INPUT_TOKENS_KEY, None)
        session.metadata["resetAt"] = to_iso(self.clock())
        self.sessions.save(session)
        return cleared
