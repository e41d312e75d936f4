"""MemoryPersist (order 50): after an answered turn, write it to the chat's memory.

It also keeps forgotten texts out of the conversation: a turn that forgot something (or
ran while a forgotten text waited for erasure) may have answered with it ("I removed your
code QX-..."); those answers and tool results are redacted in the session before it is
saved, so the next request does not carry the text back.
"""

from __future__ import annotations

import logging
from functools import partial

from mnemobot.base.clock import SYSTEM_CLOCK, Clock
from mnemobot.memory.services.forget import MemoryForget
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.systems.core.context import NO_REPLY, TurnContext

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
        return (
            ctx.config.memory.enabled
            and ctx.reply is not None
            and ctx.llm_error is None
            # An answer of NO_REPLY (a check-in with nothing to say) said nothing to remember.
            and not ctx.reply.strip().upper().startswith(NO_REPLY)
        )

    async def process(self, ctx: TurnContext) -> None:
        try:
            # In a worker thread: the write may have to load the scope first.
            work = partial(
                self.record.record_turn,
                scope=ctx.scope,
                user_text=ctx.user_text if ctx.media.own_text is None else ctx.media.own_text,
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
        forgotten = await self.forget.scopes.run(
            ctx.scope, partial(self.forget.forgotten_texts, ctx.scope)
        )
        if forgotten:
            for message in ctx.session.messages:
                content = message.get("content")
                if message.get("role") in ("assistant", "tool") and isinstance(content, str):
                    message["content"] = forgotten.redact(content)
