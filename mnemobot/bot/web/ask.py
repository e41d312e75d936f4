"""Ask: what the bot would add to the model's request now, for a question in a chat.

Built by the bot's own ContextBuilding (the system that builds every turn's prompt), on
the config a turn would have: the runtime config narrowed to the model's learned context
window (as ContextWindowLimit does before ContextBuilding), memory's share of it, the
chat's time zone, and the chat's current conversation, whose episodes the pack leaves out
because the request carries them anyway. Nothing is written: the pack never records an
access, and the conversation is a copy.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import orjson

from mnemobot.base.clock import to_iso
from mnemobot.bot.tools.clock_tool import chat_zone_name
from mnemobot.bot.web.host import WebHost
from mnemobot.config.zones import local_time
from mnemobot.conversation.session import AgentSession
from mnemobot.memory.pack.build import MemoryPack
from mnemobot.memory.store.scope_paths import GLOBAL_SCOPE
from mnemobot.model.windows import ModelWindow
from mnemobot.systems.compaction.auto_compaction import memory_room
from mnemobot.systems.core.context import ChatRef, TurnContext
from mnemobot.systems.memory_steps.context_building import ContextBuilding, wants_memory

# A question is one message: the Telegram limit is plenty.
MAX_QUESTION_CHARS = 4_096


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    model: str
    window: ModelWindow | None
    # The most tokens memory may take of this request (`MEMORY_CONTEXT_SHARE`).
    allowance: int
    memory_enabled: bool
    # False for small talk ("thanks"): the bot adds no memory at all.
    wants_memory: bool
    pack: MemoryPack | None
    system_prompt: str
    # Messages of the conversation the request would carry (their episodes are left out).
    conversation: int

    @property
    def legacy_used(self) -> bool:
        return self.pack is not None and self.pack.diagnostics.legacy_fallback_used


def _chat_of(scope: str) -> ChatRef:
    channel, _, chat_id = scope.partition(":")
    return ChatRef(channel if chat_id else "web", chat_id or scope)


def _read_session(host: WebHost, key: str) -> AgentSession:
    """The chat's conversation: the bot's own copy inside the bot, else its file (read
    only: a standalone page never sets a damaged file aside as the bot would)."""
    if host.in_bot:
        live = host.sessions.get(key)
        copy = AgentSession.new(key, live.updated_at)
        copy.messages = [message.copy() for message in live.messages]
        copy.metadata = dict(live.metadata)
        return copy
    try:
        return AgentSession.from_json_dict(orjson.loads(host.sessions.path_for(key).read_bytes()))
    except (OSError, ValueError, KeyError, TypeError):
        return AgentSession.new(key, host.clock())


async def ask(host: WebHost, scope: str, question: str, *, fresh: bool = False) -> Answer:
    """`fresh`: as after /new, with no conversation (every episode may be recalled)."""
    question = question[:MAX_QUESTION_CHARS]
    config = host.runtime.current()
    model = host.model_name(config)
    window = host.known_window(model)
    if window is not None:
        config = config.for_context_window(window.tokens)
    chat = _chat_of(scope)
    if scope == GLOBAL_SCOPE or fresh:
        session = AgentSession.new(chat.key, host.clock())
    else:
        session = await asyncio.to_thread(_read_session, host, chat.key)
    now = local_time(host.clock(), chat_zone_name(session.metadata, config))
    ctx = TurnContext(
        chat=chat,
        session=session,
        user_text=question,
        config=config,
        now=now,
        model=model,
        scope=scope,
    )
    # The same recall (and recall by meaning) the bot runs, so the page shows its pack:
    # the question joins the conversation (read, never written), and memory takes the
    # room the conversation leaves it.
    session.messages.append({"role": "user", "content": question, "at": to_iso(now.timestamp())})
    ctx.memory_room_tokens = memory_room(ctx, None)
    await ContextBuilding(host.memory.recall, host.memory.vectors).build_async(ctx)
    return Answer(
        question=question,
        model=model,
        window=window,
        allowance=config.memory_allowance_tokens(),
        memory_enabled=config.memory.enabled,
        wants_memory=wants_memory(question),
        pack=ctx.memory_pack,
        system_prompt=ctx.system_prompt,
        conversation=len(session.messages),
    )
