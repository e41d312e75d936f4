"""A model going around in circles: the same tool calls, with the same arguments, answer
after answer.

Live, SmolLM2 behind llama-cpp-python called the clock tool with `{}` twenty times in a
turn, until the model-call limit, about eight minutes on a home server, and the user read
only that the turn stopped. Failing calls have their own rule (`failing_streak`); these
succeed, so nothing ended the turn sooner. `same_calls_streak` counts them; the loop then
asks once more without tools, and the model answers from the results it has.
"""

from __future__ import annotations

from mnemobot.conversation.session import Message
from mnemobot.systems.core.tool_runner import is_error_result


def _signature(message: Message) -> tuple[tuple[str, str], ...]:
    calls = [call for call in message.get("tool_calls") or () if isinstance(call, dict)]
    return tuple(
        sorted(
            (str(function.get("name")), str(function.get("arguments") or "").strip())
            for function in (call.get("function") or {} for call in calls)
        )
    )


def same_calls_streak(messages: list[Message]) -> int:
    """How many of the newest turn's model answers in a row, counting back from the last,
    made the same tool calls with the same arguments as the last one (0 when the last
    message of the turn that calls tools is not there)."""
    streak = 0
    last: tuple[tuple[str, str], ...] | None = None
    for message in reversed(messages):
        role = message.get("role")
        if role == "user":
            break
        if role != "assistant" or not message.get("tool_calls"):
            continue
        signature = _signature(message)
        if last is None:
            last = signature
        elif signature != last:
            break
        streak += 1
    return streak


def failing_streak(messages: list[Message], name: str) -> int:
    """How many of the newest turn's model calls in a row called the tool `name` and had
    every such call fail, counting back from the last (one that succeeded, or the turn's
    user message, ends the count). Calls one answer makes together count once: three
    files read at once that do not exist are one failure, not three."""
    streak = 0
    results: dict[str, str] = {}
    for message in reversed(messages):
        role = message.get("role")
        if role == "user":
            break
        if role == "tool":
            results[str(message.get("tool_call_id"))] = str(message.get("content") or "")
            continue
        calls = [
            call
            for call in message.get("tool_calls") or ()
            if isinstance(call, dict) and (call.get("function") or {}).get("name") == name
        ]
        outcomes = [results[call["id"]] for call in calls if call.get("id") in results]
        if not outcomes:
            continue
        if not all(is_error_result(outcome) for outcome in outcomes):
            break
        streak += 1
    return streak
