"""AutoCompaction (order 18): compact before the LLM turn when the request would be too big."""

from __future__ import annotations

import logging

from mnemobot.conversation.session import Message
from mnemobot.systems.compaction.compactor import Compactor
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import ToolRunner
from mnemobot.systems.memory_steps.context_building import ContextBuilding
from mnemobot.systems.model_call.request_messages import (
    KEEP_TOOL_RESULTS_TURNS,
    estimate_request_tokens,
    message_token_limit,
    model_messages,
)

log = logging.getLogger(__name__)

# Until ContextBuilding has run once in a chat, assume a system prompt of this size.
DEFAULT_SYSTEM_PROMPT_TOKENS = 500
# Session metadata: the tool definitions' tokens the chat's last request carried.
SCHEMA_TOKENS_KEY = "lastToolSchemaTokens"
# Of memory's allowance, the part counted before compacting; memory yields the rest to the
# conversation. On a 2,048-token window a chat of long messages compacted on 24 turns of 26
# with the pack counted whole, 12 with it yielding (the same with a floor of 0 to 0.5 of
# the allowance: tests/test_context_window.py); the floor keeps a turn just under the
# threshold some recall.
MEMORY_FLOOR_SHARE = 0.25


def newest_messages_within(messages: list[Message], budget_tokens: int) -> int:
    """How many of the newest messages fit in `budget_tokens` together (at least 1)."""
    total = 0
    for count, message in enumerate(reversed(messages)):
        total += estimate_request_tokens([message])
        if total > budget_tokens:
            return max(1, count)
    return max(1, len(messages))


def estimated_request_tokens(ctx: TurnContext, tools: ToolRunner | None) -> int:
    """The next request without the memory recalled for its newest message: the prompt that
    stays from turn to turn, the conversation as the model will see it, the tools' schemas
    (`tools`; None: those the chat's last request carried)."""
    prompt_tokens = int(
        ctx.session.metadata.get("lastSystemPromptTokens", DEFAULT_SYSTEM_PROMPT_TOKENS)
    )
    messages = model_messages(
        "",
        ctx.session.messages,
        keep_tool_results_turns=KEEP_TOOL_RESULTS_TURNS,
        # As the model will see them: a message too big for the window counts in part.
        max_message_tokens=message_token_limit(ctx.config),
        speakers=ctx.chat.is_group,
    )
    if tools is not None:
        schema_tokens = tools.schema_tokens(ctx)
        ctx.session.metadata[SCHEMA_TOKENS_KEY] = schema_tokens
    else:
        # Without the tools at hand (`mnemobot memory pack`, the web page): as last sent.
        schema_tokens = int(ctx.session.metadata.get(SCHEMA_TOKENS_KEY, 0) or 0)
    return prompt_tokens + estimate_request_tokens(messages) + schema_tokens


def memory_floor_tokens(ctx: TurnContext) -> int:
    """What a request is sized with for recalled memory even when memory yields to the
    conversation: a turn just under the threshold still brings some of what it recalls."""
    if not ctx.config.memory.enabled:
        return 0
    return int(ctx.config.memory_allowance_tokens() * MEMORY_FLOOR_SHARE)


def memory_room(ctx: TurnContext, tools: ToolRunner | None) -> int | None:
    """What the conversation leaves memory under the compaction threshold this turn, never
    less than the floor; None when compaction is off (memory keeps its own budgets). As
    AutoCompaction sets it; `mnemobot memory pack` and the web page's Ask use it to show
    the pack the bot would send."""
    if not ctx.config.compaction.enabled:
        return None
    threshold = ctx.config.compaction_threshold_tokens()
    return max(memory_floor_tokens(ctx), threshold - estimated_request_tokens(ctx, tools))


class AutoCompaction:
    name = "AutoCompaction"
    order = 18

    def __init__(self, compactor: Compactor, tools: ToolRunner | None = None) -> None:
        self.compactor = compactor
        self.tools = tools

    def enabled(self, ctx: TurnContext) -> bool:
        return ctx.config.compaction.enabled

    async def process(self, ctx: TurnContext) -> None:
        # A memory flush an earlier compaction left for later and did not finish (its
        # process was stopped or killed) goes on once this turn is answered.
        self.compactor.resume_flushes(ctx.session.id, ctx.scope, ctx.config, ctx.now.tzinfo)
        threshold = ctx.config.compaction_threshold_tokens()
        floor = memory_floor_tokens(ctx)
        estimate = estimated_request_tokens(ctx, self.tools)
        if estimate + floor > threshold:
            log.info("compacting %s: ~%d tokens > %d", ctx.chat.key, estimate + floor, threshold)
            # On a small window, keepLastMessages long messages may not fit at all: keep what
            # fills half the room the prompt leaves, so the next turns fit before compacting
            # again.
            prompt_tokens = int(ctx.session.metadata.get("lastSystemPromptTokens", 0) or 0)
            room = max(0, threshold - prompt_tokens - floor) // 2
            keep = min(
                ctx.config.compaction.keep_last_messages,
                newest_messages_within(ctx.session.messages, room),
            )
            await self.compactor.compact(
                ctx.session, keep_last=keep, config=ctx.config, scope=ctx.scope, tz=ctx.now.tzinfo
            )
        # What the conversation leaves under the threshold is memory's, never less than the
        # floor: memory shrinks before the conversation is compacted for it.
        ctx.memory_room_tokens = memory_room(ctx, self.tools)


class OverflowRecovery:
    """For the ToolLoop: after a context-overflow error, compact harder and retry.

    Each round halves what is kept (of keepLastMessages, or of the session when it is
    shorter); the newest user message and tool-call pairs always stay (see plan_compaction).
    """

    def __init__(self, compactor: Compactor, context: ContextBuilding | None = None) -> None:
        self.compactor = compactor
        self.context = context

    async def __call__(self, ctx: TurnContext, attempt: int) -> bool:
        history = sum(1 for m in ctx.session.messages if m.get("role") != "system")
        keep = max(1, min(ctx.config.compaction.keep_last_messages, history) >> attempt)
        result = await self.compactor.compact(
            ctx.session, keep_last=keep, config=ctx.config, scope=ctx.scope, tz=ctx.now.tzinfo
        )
        shrunk = False
        if self.context is not None:
            # The memory parts of the prompt shrink too: a small model's context may not
            # hold a full MemoryPack next to even a short conversation.
            before = len(ctx.system_prompt)
            await self.context.build_async(ctx, memory_scale=0.5**attempt)
            shrunk = len(ctx.system_prompt) < before
        return result.removed > 0 or shrunk
