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
