"""ReplyStream: where a turn shows its answer while the model is still writing it.

A channel that can show text as it arrives (Telegram edits a message) hands the turn a
`ReplyStream` in `TurnContext.reply_stream`; the ToolLoop asks the model for a stream and
tells the channel the answer so far, and what a tool call is doing meanwhile. The final
reply still goes out the channel's usual way (Telegram: its durable outbox): what a stream
shows is a preview, and losing it loses nothing.

`show` and `tool_running` must return at once: a model streaming tokens never waits for a
channel's network calls (a channel keeps the latest text and sends it at its own pace).
"""

from __future__ import annotations

from typing import Protocol

# Ends the text of an answer that /stop cut short, shown and kept in the session alike.
STOPPED_MARK = "⏹ Stopped."


class ReplyStream(Protocol):
    def show(self, text: str) -> None:
        """The answer as it stands now: the whole text so far, not a delta."""
        ...

    def tool_running(self, status: str) -> None:
        """A tool runs now; `status` is one short line saying what it does
        ("🔎 searching memory…"), shown under the text so far until `show` is called again."""
        ...

    @property
    def stop_requested(self) -> bool:
        """The user stopped this reply (/stop): what was shown is kept, marked stopped."""
        ...


def joined_reply(parts: list[str]) -> str:
    """A turn's reply from what the model said along the way: the text it wrote before each
    tool call, then its answer; the user saw them in this order, so none is dropped."""
    return "\n\n".join(part for part in parts if part)


def stopped_reply(text: str, mark: str = STOPPED_MARK) -> str:
    """What a stopped answer becomes: the text shown so far, then the mark (`mark`: in the
    reader's words)."""
    return f"{text}\n\n{mark}" if text else mark
