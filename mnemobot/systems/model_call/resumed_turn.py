"""A turn handed over again after a crash goes on from the tool calls it had made.

The ToolLoop keeps the session (fsynced, or in Redis) once the model has asked for a round
of tool calls, before any of them runs, and again after each call with its result: every
call that may have had an effect is on record before the turn goes on. When the bot dies
before the turn's reply is stored, the inbox hands the same message over again (alone, or
merged with newer ones: the assistant then gives the waiting message their words), and
the session ends with that message and the steps already done. They are the turn's steps
here too: the model is asked again with them in its conversation, as when the turn went on
without a crash, so nothing is run a second time. A call that was on record as asked for
but has no result was cut off while it ran, or before: whether it took effect is unknown,
so it is not run again; the model reads that and can check (list the reminders, ask).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from mnemobot.conversation.session import Message
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import is_error_result

CUT_OFF_RESULT = (
    "error: this call was cut off: the bot stopped while it ran, or just before, so whether "
    "it took effect is unknown. Do not run it again before checking that it did not (or "
    "asking the user)"
)
# Where a tool message keeps the lines its call added to the turn's reply
# (`TurnContext.reply_notes`: what was scheduled), so a resumed turn shows them as well.
REPLY_NOTES_KEY: Final = "notes"


@dataclass(frozen=True, slots=True)
class ResumedTurn:
    # The text the model wrote before its tool calls, which the user reads with the answer.
    said: list[str]
    calls: int
    cut_off: int


def resume_turn(ctx: TurnContext) -> ResumedTurn | None:
    """The steps this turn had done before a crash, taken up again: counted against the
    turn's limits, their results and reply lines restored; a call with no result gets one
    saying it was cut off. None when the turn starts afresh."""
    messages = ctx.session.messages
    last_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"),
        None,
    )
    if last_user is None or not ctx.message_refs:
        return None
    if messages[last_user].get("refs") != list(ctx.message_refs):
        return None
    steps = messages[last_user + 1 :]
    if not any(m.get("role") == "assistant" and m.get("tool_calls") for m in steps):
        return None
    said: list[str] = []
    calls = cut_off = 0
    done: list[Message] = []
    # Results owed by the last assistant message: added after the results it has.
    owed: list[Message] = []
    for index, message in enumerate(steps):
        if message.get("role") != "tool":
            done += owed
            owed = []
        done.append(message)
        if message.get("role") == "tool":
            ctx.tool_executions += 1
            output = str(message.get("content") or "")
            (ctx.tool_errors if is_error_result(output) else ctx.tool_outputs).append(output)
            notes = message.get(REPLY_NOTES_KEY)
            if isinstance(notes, list):
                ctx.reply_notes.extend(str(note) for note in notes)
            continue
        tool_calls = message.get("tool_calls")
        if message.get("role") != "assistant" or not isinstance(tool_calls, list):
            continue
        ctx.llm_calls += 1
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            said.append(content.strip())
        answered = _results_following(steps, index)
        for call in tool_calls:
            calls += 1
            if not isinstance(call, dict) or call.get("id") in answered:
                continue
            cut_off += 1
            ctx.tool_executions += 1
            # What a damaged file lacks (a call's id or name, the time) stays out.
            result: Message = {"role": "tool"}
            if isinstance(call_id := call.get("id"), str):
                result["tool_call_id"] = call_id
            function = call.get("function")
            if isinstance(function, dict) and isinstance(name := function.get("name"), str):
                result["name"] = name
            result["content"] = CUT_OFF_RESULT
            if isinstance(at := message.get("at"), str):
                result["at"] = at
            owed.append(result)
    messages[last_user + 1 :] = done + owed
    return ResumedTurn(said=said, calls=calls, cut_off=cut_off)


def _results_following(steps: list[Message], index: int) -> set[object]:
    found: set[object] = set()
    for message in steps[index + 1 :]:
        if message.get("role") != "tool":
            break
        found.add(message.get("tool_call_id"))
    return found
