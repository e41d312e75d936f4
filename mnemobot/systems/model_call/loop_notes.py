"""What the ToolLoop says to the user by itself, named here and worded above.

The loop writes a few lines of its own into a reply: that it stopped before finishing,
that a tool kept failing and was taken away, that an answer or a message was cut. They
are in the reader's language, and the words live in the bot's catalogs, which this layer
may not import: the loop names the note and its fields (`LoopNote`), and the bot hands
it a `LoopNotes` that words them for a chat's language (`mnemobot.bot.turn.tool_loop_words`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class LoopNote(StrEnum):
    """A line the loop writes for the user; its fields are listed beside it."""

    # The reply of a turn that ended at a limit before a plain answer. why: one of the
    # three below, already worded.
    STOPPED = "stopped"
    # limit: toolLoop.maxLlmCalls (an int).
    LLM_CALL_LIMIT = "llmCallLimit"
    # limit: the tool runs one turn may make (an int).
    TOOL_RUN_LIMIT = "toolRunLimit"
    # seconds: what one turn's tools may take together (a float).
    TOOL_TIME_SPENT = "toolTimeSpent"
    # Under the answer when a tool kept failing and the model answered without tools.
    # name: the tool; error: its last error, as the tool said it (the model's words).
    TOOL_TAKEN_AWAY = "toolTakenAway"
    # Under an answer the model cut at its length limit. limit: which limit, as the model
    # client says it, or UNSAID_LIMIT worded.
    CUT_ANSWER = "cutAnswer"
    # The limit of a cut answer when the model client does not say which one it set.
    UNSAID_LIMIT = "unsaidLimit"
    # The limit of a cut answer the model client names (`AnswerCap`). cap: the AnswerCap.
    ANSWER_CAP = "answerCap"
    # Under the answer when the newest message is shown to the model only in part.
    # chars: its length in characters (an int).
    CUT_MESSAGE = "cutMessage"
    # The reply when the model answered nothing.
    EMPTY_ANSWER = "emptyAnswer"
    # Under what was shown of an answer the user stopped (/stop).
    STOPPED_MARK = "stoppedMark"
    # Under what was shown of an answer the model did not finish within its time limit.
    TIMED_OUT_MARK = "timedOutMark"


class LoopNotes(Protocol):
    def __call__(self, language: str | None, note: LoopNote, /, **fields: object) -> str:
        """`note` worded for a reader of `language` (Telegram's `language_code` of the
        sender, `ChatRef.language`; None: unknown), `fields` filled in."""
        ...
