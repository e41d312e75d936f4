"""MemoryPersist (order 50): after a turn, write it to the chat's memory.

A turn the model failed to answer (a timeout, a server error: the user is told so in one
line) is written too: the user's words, with no reply, once (`memory.services.unanswered`),
so what they said is remembered even if the conversation is cleared before a later turn.
A later run of the same message (handed in again after a crash) writes its answer alone.

It also keeps forgotten texts out of the conversation: a turn that forgot something (or
ran while a forgotten text waited for erasure) may have answered with it ("I removed your
code QX-..."); those answers, tool results and earlier messages are redacted in the
session before it is saved, so the next request does not carry the text back
(`forgotten_in_session`).
"""

from __future__ import annotations

import logging
from functools import partial

from mnemobot.base.clock import SYSTEM_CLOCK, Clock, from_iso
from mnemobot.memory.services.forget import MemoryForget
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.memory.services.unanswered import (
    UnansweredTurn,
    record_unanswered,
    words_noted,
)
from mnemobot.systems.core.context import NO_REPLY, TurnContext, sole_speaker
from mnemobot.systems.memory_steps.forgotten_in_session import keep_forgotten_out

log = logging.getLogger(__name__)


class MemoryPersist:
    name = "MemoryPersist"
    order = 50

    def __init__(
        self, record: MemoryRecord, forget: MemoryForget, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        """`forget`: what was forgotten, kept out of the conversation. `clock` dates a
        turn that does not say when it happened (`ctx.occurred_at`)."""
        self.record = record
        self.forget = forget
        self.clock = clock

    def enabled(self, ctx: TurnContext) -> bool:
        if not ctx.config.memory.enabled:
            return False
        if ctx.reply is None:
            # No answer: the user's words are remembered all the same; a scheduled task's
            # text is no one's words (its firing is tried again or reported).
            message = ctx.user_message
            return message is not None and not message.get("scheduled")
        # An answer of NO_REPLY (a check-in with nothing to say) said nothing to remember.
        return ctx.llm_error is None and not ctx.reply.strip().upper().startswith(NO_REPLY)

    def _user_words(self, ctx: TurnContext) -> str:
        return ctx.user_text if ctx.media.own_text is None else ctx.media.own_text

    async def _words_kept(self, ctx: TurnContext) -> bool:
        """Whether an earlier run of this message remembered its words as a turn without
        an answer: marked on the message, or, when a crash came before the mark was saved,
        found in the daily note (then what the crash left unwritten is written now)."""
        message = ctx.user_message
        if message is not None and message.get("remembered"):
            return True
        if not ctx.handed_again:
            return False
        turn = self._unanswered_turn(ctx)
        scopes = self.record.scopes
        if not await scopes.run(ctx.scope, partial(words_noted, self.record, turn)):
            return False
        await scopes.run(ctx.scope, partial(record_unanswered, self.record, turn), write=True)
        return True

    def _said_at(self, ctx: TurnContext) -> float:
        """When the message was said: the same on every run of it."""
        stamp = ctx.user_message.get("at") if ctx.user_message is not None else None
        if isinstance(stamp, str):
            try:
                return from_iso(stamp)
            except ValueError:
                pass
        return self.clock() if ctx.occurred_at is None else ctx.occurred_at

    def _unanswered_turn(self, ctx: TurnContext) -> UnansweredTurn:
        return UnansweredTurn(
            scope=ctx.scope,
            chat_key=ctx.chat.key,
            user_text=self._user_words(ctx),
            at=self._said_at(ctx),
            tz=ctx.now.tzinfo or ctx.config.assistant.tzinfo(),
            message_refs=list(ctx.message_refs),
            speaker=ctx.chat.user_name,
            note_speaker=ctx.chat.user_name if ctx.chat.is_group else None,
            tags=list(ctx.media.tags),
            sole_speaker=sole_speaker(ctx.chat, ctx.config),
        )

    async def process(self, ctx: TurnContext) -> None:
        try:
            if ctx.reply is None:
                # In a worker thread: the write may have to load the scope first.
                write = partial(record_unanswered, self.record, self._unanswered_turn(ctx))
                ctx.memory_items_recorded = await self.record.scopes.run(
                    ctx.scope, write, write=True
                )
                if ctx.user_message is not None:
                    ctx.user_message["remembered"] = True
                await self._keep_forgotten_out(ctx)
                return
            kept = await self._words_kept(ctx)
            work = partial(
                self.record.record_turn,
                scope=ctx.scope,
                # The words are in memory already: the answer alone is new.
                user_text="" if kept else self._user_words(ctx),
                assistant_text=ctx.remembered_reply
                if ctx.remembered_reply is not None
                else ctx.reply or "",
                at=self.clock() if ctx.occurred_at is None else ctx.occurred_at,
                config=ctx.config.memory,
                tz=ctx.now.tzinfo or ctx.config.assistant.tzinfo(),
                message_refs=ctx.message_refs,
                tool_outputs=ctx.tool_outputs,
                tool_errors=ctx.tool_errors,
                speaker=ctx.chat.user_name,
                # The daily note names a group's member; a private chat's says "User".
                note_speaker=ctx.chat.user_name if ctx.chat.is_group else None,
                # A private chat's user is one person under any name they go by.
                sole_speaker=sole_speaker(ctx.chat, ctx.config),
                chat_key=ctx.chat.key,
                forwarded=ctx.media.forwarded,
                documents=ctx.media.documents,
                tags=ctx.media.tags,
            )
            # A write once queued completes even if the turn is cancelled (/stop).
            recorded = await self.record.scopes.run(ctx.scope, work, write=True)
        except OSError as exc:
            # The disk, not the code: one line, no traceback.
            log.warning("memory write failed for %s: %s", ctx.chat.key, exc)
            ctx.memory_write_failed = True
            ctx.memory_storage_failed = True
            return
        except Exception:
            # Fail-safe: the reply goes out whatever happens to the memory write.
            log.exception("memory write failed for %s; the reply is unaffected", ctx.chat.key)
            ctx.memory_write_failed = True
            return
        ctx.memory_items_recorded = len(recorded.stored)
        await self._keep_forgotten_out(ctx)

    async def _keep_forgotten_out(self, ctx: TurnContext) -> None:
        forgotten = await self.forget.scopes.run(
            ctx.scope, partial(self.forget.forgotten_texts, ctx.scope)
        )
        keep_forgotten_out(ctx.session.messages, forgotten, current=ctx.user_message)
