"""The `Channel` protocol: what a way of talking to the bot (Telegram, the console) provides.

A channel turns its own updates into `LaneJob`s and hands them to a `ChatDispatcher`, which
answers commands, keeps each chat's messages in order and runs the turns; the channel only
says how to start, how to stop and how text gets back to a chat.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from mnemobot.bot.channels.lanes import LaneJob


class Channel(Protocol):
    # The `ChatRef.channel` of its chats, and the key of its runtime-config section.
    name: str

    async def start(self) -> None:
        """Begin taking messages; returns once the channel is ready."""
        ...

    async def stop(self, grace_seconds: float) -> None:
        """Take nothing new, let running turns finish for `grace_seconds`, cancel the rest."""
        ...

    async def send_text(self, job: LaneJob, text: str) -> None:
        """Plain text to the chat of `job` (command answers, notices), quoting as it says."""
        ...

    async def send_reply(self, job: LaneJob, markdown: str) -> None:
        """The assistant's answer, in Markdown, rendered as the channel can."""
        ...

    def working(self, job: LaneJob) -> AbstractAsyncContextManager[object]:
        """Entered while a turn runs, e.g. Telegram's typing indicator."""
        ...
