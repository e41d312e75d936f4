"""ToolLoop (order 30): ask the model, run the tools it calls, repeat until a plain answer.

Longer than a module of ours should be: the loop's states (asking, running calls,
recovering from an overflow, stopping, keeping what was said) act on one turn's context and
must stay in step; what stands alone is in the modules beside it (`tool_run`,
`resumed_turn`, `said_so_far`, `loop_notes`, `repeated_calls`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from mnemobot.base.clock import SYSTEM_CLOCK, Clock, to_iso
from mnemobot.conversation.large_results import LargeResultStore
from mnemobot.conversation.session import AgentSession, Message
from mnemobot.model.windows import ModelWindow
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.llm import ChatModel, ChatRequest, LLMError, LLMFailureKind, ToolCall
from mnemobot.systems.core.newest_context import context_block, with_newest_context
from mnemobot.systems.core.reply_stream import joined_reply, stopped_reply
from mnemobot.systems.core.tool_runner import (
    ERROR_RESULT_PREFIX,
    ToolRunner,
    is_error_result,
)
from mnemobot.systems.model_call.context_window import WINDOW_EXTRA, narrow_to_window
from mnemobot.systems.model_call.image_parts import with_images
from mnemobot.systems.model_call.loop_notes import LoopNote, LoopNotes
from mnemobot.systems.model_call.model_output import (
    cut_reply,
    stored_arguments,
    unique_call_ids,
    without_control_characters,
)
from mnemobot.systems.model_call.prompt_usage import count_input
from mnemobot.systems.model_call.repeated_calls import failing_streak, same_calls_streak
from mnemobot.systems.model_call.request_messages import (
    KEEP_TOOL_RESULTS_TURNS,
    is_cut,
    message_token_limit,
    model_messages,
    with_turn_notes,
    without_request_notes,
)
from mnemobot.systems.model_call.resumed_turn import REPLY_NOTES_KEY, resume_turn
from mnemobot.systems.model_call.said_so_far import SaidSoFar
from mnemobot.systems.model_call.tool_limits import DEFAULT_TOOL_LIMITS, ToolLimits
from mnemobot.systems.model_call.tool_run import run_tool

log = logging.getLogger(__name__)

# Keeps the session where a crash cannot take it (fsynced to disk, or stored in Redis) and
# returns once it is there: how a tool call is on record before it runs and, with its
# result, before the turn goes on (see `resumed_turn`).
SaveSession = Callable[[AgentSession], Awaitable[None]]

# Called when the model says the context overflowed; `attempt` counts from 1. Returns True
# when it made the context smaller, so the call is worth retrying.
OverflowRecovery = Callable[[TurnContext, int], Awaitable[bool]]

MAX_OVERFLOW_ROUNDS = 3
# ctx.extras key of the note for the user while the newest message is shown only in part.
CUT_MESSAGE_EXTRA = "cutMessageNote"
NOT_RECORDED_RESULT = (
    "error: not run: the bot could not record this call before running it (its storage is "
    "failing); tell the user to try again later"
)
# A tool result longer than this is stored in large_tool_results/ and the session keeps a
# reference (the model reads it in parts). Not measured; about 20k tokens, a fifth of a
# large context window.
TOOL_RESULT_EVICTION_CHARS = 80_000


# TurnContext.extras: a tool kept failing; the turn's next call goes without tools.
_TOOLS_TAKEN_AWAY = "toolsTakenAway"


def _call_ids(messages: list[Message]) -> set[str]:
    ids = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                ids.add(call["id"])
    return ids


class ToolLoop:
    name = "ToolLoop"
    order = 30

    def __init__(
        self,
        llm: ChatModel,
        tools: ToolRunner,
        *,
        notes: LoopNotes,
        overflow_recovery: OverflowRecovery | None = None,
        large_results: LargeResultStore | None = None,
        clock: Clock = SYSTEM_CLOCK,
        save_session: SaveSession | None = None,
        limits: ToolLimits = DEFAULT_TOOL_LIMITS,
    ) -> None:
        """`notes`: how the lines the loop writes for the user itself are worded in the
        chat's language; `clock` dates the messages the turn adds (a replay passes its
        own); `save_session`: how tool calls are put on record before they run and before
        the turn goes on past them (None: they are not, as in a replay of a past chat)."""
        self.llm = llm
        self.notes = notes
        self.limits = limits
        self.save_session = save_session
        self.clock = clock
        self.tools = tools
        self.overflow_recovery = overflow_recovery
        self.large_results = large_results

    def _now(self) -> str:
        return to_iso(self.clock())

    def _note(self, ctx: TurnContext, note: LoopNote, **fields: object) -> str:
        return self.notes(ctx.chat.language, note, **fields)

    def enabled(self, ctx: TurnContext) -> bool:
        return ctx.reply is None

    async def process(self, ctx: TurnContext) -> None:
        said = SaidSoFar(ctx.reply_stream)
        resumed = resume_turn(ctx)
        if resumed is not None:
            said.earlier += resumed.said
            log.info(
                "turn in %s goes on from %d tool call(s) made before a restart (%d cut off)",
                ctx.chat.key,
                resumed.calls,
                resumed.cut_off,
            )
        try:
            await self._loop(ctx, said)
        except LLMError as error:
            if error.kind is LLMFailureKind.TIMEOUT and said.shown:
                # A slow home server ran out of time mid-answer: what the user already
                # read stays, marked cut, rather than being replaced by an apology.
                self._keep_cut(ctx, said, LoopNote.TIMED_OUT_MARK)
                return
            # No reply: the assistant turns this into a short apology; the user's message
            # is already saved in the session.
            ctx.llm_error = error
            ctx.stop_reason = error.user_text()
        except asyncio.CancelledError:
            if said.stream is not None and said.stream.stop_requested and said.shown:
                self._keep_stopped(ctx, said)
            raise

    async def _loop(self, ctx: TurnContext, said: SaidSoFar) -> None:
        """Ask, run the tools the model calls, ask again: until a plain answer or a limit."""
        limits = ctx.config.tool_loop
        overflow_rounds = 0
        # Overflow rounds in which a message alone was too big: each shows less of it.
        message_shrinks = 0
        while True:
            if ctx.llm_calls >= limits.max_llm_calls:
                why = self._note(ctx, LoopNote.LLM_CALL_LIMIT, limit=limits.max_llm_calls)
                self._stop(ctx, why, said)
                return
            request = self._request(ctx, message_shrinks)
            said.current = ""
            if said.stream is not None:
                request.on_text = said.hear
            try:
                ctx.llm_calls += 1
                response = await self.llm.complete(request)
                count_input(ctx.session.metadata, response, request)
            except LLMError as error:
                shrinks = await self._recovered(
                    ctx, error, overflow_rounds, message_shrinks, request
                )
                if shrinks is not None:
                    message_shrinks = shrinks
                    overflow_rounds += 1
                    ctx.llm_calls -= 1
                    continue
                raise
            content = without_control_characters(response.content or "")
            if not response.tool_calls:
                self._answer(ctx, content, said)
                if response.finish_reason == "length":
                    # Cut at the model's output limit or the end of its window: the user
                    # would otherwise take half a sentence for the whole answer.
                    cap = response.length_limit
                    limit = (
                        self._note(ctx, LoopNote.ANSWER_CAP, cap=cap)
                        if cap is not None
                        else self._note(ctx, LoopNote.UNSAID_LIMIT)
                    )
                    ctx.notes.append(self._note(ctx, LoopNote.CUT_ANSWER, limit=limit))
                return
            content = cut_reply(content, self.limits.max_reply_chars)
            said.before_tools(content.strip())
            limit_reached = await self._run_calls(ctx, content, response.tool_calls, said)
            if limit_reached is not None:
                self._stop(ctx, limit_reached, said)
                return

    def _request(self, ctx: TurnContext, message_shrinks: int = 0) -> ChatRequest:
        """The next model call: the session as the model sees it, and the tools."""
        llm_config = ctx.config.llm
        message_tokens = message_token_limit(ctx.config, message_shrinks)
        self._note_if_cut(ctx, message_tokens)
        messages = model_messages(
            ctx.system_prompt,
            ctx.session.messages,
            keep_tool_results_turns=KEEP_TOOL_RESULTS_TURNS,
            max_message_tokens=message_tokens,
            # Several people write in a group: the model must know who asks what.
            speakers=ctx.chat.is_group,
        )
        # The time and the recall for the newest message go with it, on every call of
        # the turn; the requests of the next turns begin with this one, without them.
        messages = with_newest_context(
            messages, context_block(ctx.newest_message_context, time=ctx.newest_message_time)
        )
        return ChatRequest(
            # This turn's images go with its message on every call of the turn.
            messages=with_images(with_turn_notes(messages, ctx.turn_notes), ctx.media.images),
            model=ctx.model,
            temperature=llm_config.temperature,
            # A cap: a model client that knows the window asks for what still fits.
            max_output_tokens=llm_config.max_output_tokens,
            timeout_seconds=llm_config.request_timeout_seconds,
            # Asked on every call: after an overflow error the window may be known and
            # the tool definitions may no longer fit (the registry leaves them out).
            tools=[] if ctx.extras.get(_TOOLS_TAKEN_AWAY) else self.tools.schemas(ctx),
            vision=llm_config.vision,
            reply=True,
        )

    def _note_if_cut(self, ctx: TurnContext, message_tokens: int) -> None:
        """Tell the user when the model sees only part of their message (it is too big for
        the model's window): the answer is about what it saw, and nothing is lost."""
        ctx.extras.pop(CUT_MESSAGE_EXTRA, None)
        newest = next((m for m in reversed(ctx.session.messages) if m.get("role") == "user"), None)
        content = newest.get("content") if newest is not None else None
        if isinstance(content, str) and is_cut(content, message_tokens):
            ctx.extras[CUT_MESSAGE_EXTRA] = self._note(
                ctx, LoopNote.CUT_MESSAGE, chars=len(content)
            )

    async def _recovered(
        self,
        ctx: TurnContext,
        error: LLMError,
        rounds_done: int,
        message_shrinks: int,
        failed: ChatRequest,
    ) -> int | None:
        """After a failed call: None when it is not worth making again, else how many times
        a message too big for the model is to be shrunk in the next call. An overflow (at
        most MAX_OVERFLOW_ROUNDS times a turn) first narrows the config to a window the
        server stated, then compacts; only when neither made the request smaller is a
        message shown in a smaller part."""
        learned = False
        if error.context_window is not None:
            known = ctx.extras.get(WINDOW_EXTRA)
            learned = not isinstance(known, ModelWindow) or known.tokens != error.context_window
            # The server stated its window: compact and budget against it from now on, and
            # the prompt rebuilt for the retry speaks only of the tools that still fit.
            narrow_to_window(ctx, ModelWindow(error.context_window, "overflow error"))
            if ctx.offered_tools is not None:
                ctx.offered_tools = frozenset(
                    t["function"]["name"] for t in self.tools.schemas(ctx)
                )
        if (
            error.kind is not LLMFailureKind.CONTEXT_OVERFLOW
            or self.overflow_recovery is None
            or rounds_done >= MAX_OVERFLOW_ROUNDS
        ):
            return None
        log.warning("context overflow in %s; compacting (round %d)", ctx.chat.key, rounds_done + 1)
        smaller = await self.overflow_recovery(ctx, rounds_done + 1)
        if learned:
            return message_shrinks
        # A message shown in part already is shown in a smaller part next round.
        limit = message_token_limit(ctx.config, message_shrinks)
        if any(
            isinstance(m.get("content"), str) and is_cut(str(m["content"]), limit)
            for m in ctx.session.messages
        ):
            return message_shrinks + 1
        # The window the error stated may leave less room for the tool definitions: the
        # retry goes with fewer of them, or shorter ones, or none: smaller too.
        if smaller or self.tools.schemas(ctx) != list(failed.tools or ()):
            return message_shrinks
        return None

    def _answer(self, ctx: TurnContext, content: str, said: SaidSoFar) -> None:
        answer = cut_reply(without_request_notes(content), self.limits.max_reply_chars)
        words = joined_reply([*said.earlier, answer])
        empty = self._note(ctx, LoopNote.EMPTY_ANSWER)
        self._finish(ctx, answer or empty, words or empty, words=words)
        cut_note = ctx.extras.pop(CUT_MESSAGE_EXTRA, None)
        if isinstance(cut_note, str):
            ctx.notes.append(cut_note)

    def _finish(
        self,
        ctx: TurnContext,
        content: str,
        reply: str,
        *,
        stopped: bool = False,
        words: str | None = None,
    ) -> None:
        """The turn's last message and its reply: what the user reads is the text written
        before the tool calls too, kept with the message (`reply`) so that a message
        handed over again after a crash gets the same answer. `words`: the model's own
        words in the reply, when the reply holds a line of the loop's (memory keeps them
        alone: the loop saying it stopped is nothing the user said or learned)."""
        message: Message = {"role": "assistant", "content": content}
        if stopped:
            message["stopped"] = True
        if reply != content:
            message["reply"] = reply
        message["at"] = self._now()
        ctx.add_message(message)
        ctx.reply = reply
        ctx.remembered_reply = words if words != reply else None

    def _keep_stopped(self, ctx: TurnContext, said: SaidSoFar) -> None:
        """/stop cut the answer short: what was shown stays, marked stopped, in the session
        and on screen (the channel sends the stream's last text as the reply)."""
        self._keep_cut(ctx, said, LoopNote.STOPPED_MARK)

    def _keep_cut(self, ctx: TurnContext, said: SaidSoFar, note: LoopNote) -> None:
        """What was shown of an answer cut short stays, under `note`'s mark."""
        partial = cut_reply(said.current.strip(), self.limits.max_reply_chars)
        mark = self.notes(ctx.chat.language, note)
        words = joined_reply([*said.earlier, partial])
        reply = stopped_reply(words, mark)
        # Memory keeps what the model said, not the line saying it was cut.
        self._finish(ctx, stopped_reply(partial, mark), reply, stopped=True, words=words)
        if said.stream is not None:
            said.stream.show(reply)

    async def _run_calls(
        self, ctx: TurnContext, content: str, tool_calls: list[ToolCall], said: SaidSoFar
    ) -> str | None:
        """Record the model's tool calls and run them in order, each within its time limit;
        returns why the turn must stop when a limit of the turn (tool runs, tool time) left
        some of them unrun (each gets an error result), else None."""
        limits = self.limits
        tool_timeout = ctx.config.tool_loop.tool_timeout_seconds
        calls = unique_call_ids(tool_calls, _call_ids(ctx.session.messages))
        kept_chars = limits.max_stored_argument_chars
        ctx.add_message(
            {
                "role": "assistant",
                "content": content or None,
                "tool_calls": [
                    ToolCall(
                        c.id, c.name, stored_arguments(c.arguments, kept_chars)
                    ).to_message_dict()
                    for c in calls
                ],
                "at": self._now(),
            }
        )
        # On record before any of them runs: a crash from here on never runs them again.
        recorded = await self._record(ctx, before_calls=True)
        limit_reached: str | None = None
        # The last failure of each tool in this answer's calls.
        failures: dict[str, str] = {}
        for call in calls:
            left = limits.max_tool_seconds - ctx.tool_seconds
            notes_before = len(ctx.reply_notes)
            if not recorded:
                result = NOT_RECORDED_RESULT
            elif ctx.tool_executions >= limits.max_tool_executions:
                limit_reached = self._note(
                    ctx, LoopNote.TOOL_RUN_LIMIT, limit=limits.max_tool_executions
                )
                result = "error: not run, the tool execution limit of this turn was reached"
            elif left <= 0:
                limit_reached = self._time_spent(ctx)
                result = "error: not run, the tool time limit of this turn was reached"
            else:
                ctx.tool_executions += 1
                said.tool_running(self.tools, call, ctx.chat.language)
                started = time.monotonic()
                result = await run_tool(
                    self.tools,
                    ctx,
                    call.name,
                    call.arguments,
                    min(tool_timeout, left),
                    turn_limited=left < tool_timeout,
                )
                ctx.tool_seconds += time.monotonic() - started
                result = self._evict_if_large(ctx, call.id, result)
            message: Message = {
                "role": "tool",
                "tool_call_id": call.id,
                "name": call.name,
                "content": result,
                "at": self._now(),
            }
            if len(ctx.reply_notes) > notes_before:
                message[REPLY_NOTES_KEY] = ctx.reply_notes[notes_before:]
            ctx.add_message(message)
            if recorded:
                await self._record(ctx)
            if is_error_result(result):
                failures[call.name] = result
                ctx.tool_errors.append(result)
        for name, result in failures.items():
            if failing_streak(ctx.session.messages, name) >= limits.max_failed_calls_in_a_row:
                # The model answers once more, without tools, and the user reads why the
                # tool did nothing (a small local model retries a call it cannot get right).
                ctx.extras[_TOOLS_TAKEN_AWAY] = True
                error = result[len(ERROR_RESULT_PREFIX) :].strip()[:200]
                note = self._note(ctx, LoopNote.TOOL_TAKEN_AWAY, name=name, error=error)
                if note not in ctx.reply_notes:
                    ctx.reply_notes.append(note)
        if same_calls_streak(ctx.session.messages) >= limits.max_same_calls_in_a_row:
            # Going around in circles: the model answers from the results it has.
            ctx.extras[_TOOLS_TAKEN_AWAY] = True
        if limit_reached is None and ctx.tool_seconds >= limits.max_tool_seconds:
            limit_reached = self._time_spent(ctx)
        return limit_reached

    def _time_spent(self, ctx: TurnContext) -> str:
        seconds = float(self.limits.max_tool_seconds)
        return self._note(ctx, LoopNote.TOOL_TIME_SPENT, seconds=seconds)

    async def _record(self, ctx: TurnContext, *, before_calls: bool = False) -> bool:
        """Keep the session with the turn's calls so far; False when it could not be kept."""
        if self.save_session is None:
            return True
        try:
            await self.save_session(ctx.session)
        except Exception as error:  # a full disk, a lost Redis lease: said in the result
            log.warning(
                "could not record the tool calls of %s%s (%s: %s)",
                ctx.chat.key,
                "; not running them" if before_calls else "",
                type(error).__name__,
                error,
            )
            return False
        return True

    def _evict_if_large(self, ctx: TurnContext, call_id: str, result: str) -> str:
        if self.large_results is None or len(result) <= TOOL_RESULT_EVICTION_CHARS:
            return result
        return self.large_results.evict(ctx.session.id, call_id, result)

    def _stop(self, ctx: TurnContext, why: str, said: SaidSoFar) -> None:
        ctx.stop_reason = why
        text = self._note(ctx, LoopNote.STOPPED, why=why)
        self._finish(
            ctx, text, joined_reply([*said.earlier, text]), words=joined_reply(said.earlier)
        )
