"""What one turn may do beside the settings' `toolLoop` limits: how many tool calls, how
long they may take together, how much of a call's arguments the session keeps, the longest
answer, and when a tool failing or repeated again and again is taken away."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """What one turn may do beside the settings' `toolLoop` limits: constants, not
    settings (a test passes tighter ones)."""

    # Most tool calls executed in one turn; the model calls (toolLoop.maxLlmCalls) bound
    # the loop first in practice. Not measured (the design's value).
    max_tool_executions: int = 80
    # Seconds all tool calls of one turn may take together; past it the remaining calls
    # are not run and the turn ends with what it has. Not measured; ten minutes.
    max_tool_seconds: float = 600
    # A tool call's arguments longer than this run as they are, but the session keeps
    # only their start (marked as cut): every later request resends the session. Not
    # measured; about 5k tokens.
    max_stored_argument_chars: int = 20_000
    # Longest answer kept and sent, in characters; a longer one (a server that ignored
    # llm.maxOutputTokens) is cut here, and the reply says so. Not measured; 25 Telegram
    # messages, far past any real answer.
    max_reply_chars: int = 100_000
    # Model calls in a row whose calls of one tool all failed (their result an error)
    # before the turn's next call goes without tools and the answer says why. Not
    # measured as a rate: a model that reads the error fixes its call at the next try or
    # never; live, SmolLM2 behind llama-cpp-python called `schedule` with bad arguments
    # until the 20-call limit, minutes on a home server.
    max_failed_calls_in_a_row: int = 3
    # The same calls with the same arguments, answer after answer, that end the tools of
    # the turn (`repeated_calls`): reasoned, not measured; a tool polled for a status
    # (the same arguments on purpose) gets four looks before the model must answer.
    max_same_calls_in_a_row: int = 4


DEFAULT_TOOL_LIMITS = ToolLimits()
