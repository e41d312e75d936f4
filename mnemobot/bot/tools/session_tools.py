"""Tools over the current chat's own raw history: session_history, session_search, and
read_tool_result for evicted large tool results. Each is bound to the turn's chat.

A text forgotten and not yet erased from these files (the erasure waits while a chat is
busy) reads "[forgotten]" here, as it does in the conversation a turn sends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.bot.i18n import N_
from mnemobot.conversation.large_results import LargeResultStore
from mnemobot.conversation.session import SessionStore
from mnemobot.conversation.session_log import LoggedMessage, read_history, search_history
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import Tool, ToolError

MESSAGE_CHARS = 2_000
PAGE_CHARS = 20_000


def _format(entries: list[LoggedMessage]) -> str:
    lines = []
    for entry in entries:
        text = entry.text if len(entry.text) <= MESSAGE_CHARS else entry.text[:MESSAGE_CHARS] + "…"
        lines.append(f"[{entry.at or 'unknown time'}] {entry.role}: {text}")
    return "\n".join(lines)


class HistoryArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = Field(20, ge=1, le=200, description="How many of the latest messages.")
    before: int = Field(0, ge=0, description="Skip this many of the newest messages first.")


class SearchArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(..., min_length=1, description="Keywords to look for.")
    limit: int = Field(10, ge=1, le=50)


class ReadResultArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result_id: str = Field(
        ..., min_length=1, description="The result_id named in the shortened result."
    )
    offset: int = Field(0, ge=0)


def _kept_out(entries: list[LoggedMessage], forgotten: ForgottenTexts) -> list[LoggedMessage]:
    return [replace(entry, text=forgotten.redact(entry.text)) for entry in entries]


class SessionTools:
    def __init__(
        self,
        sessions: SessionStore,
        large_results: LargeResultStore,
        forgotten: Callable[[str], ForgottenTexts] = lambda scope: ForgottenTexts(),
    ) -> None:
        self.sessions = sessions
        self.large_results = large_results
        # A scope's texts forgotten and not yet erased.
        self.forgotten = forgotten

    def tools(self) -> list[Tool]:
        return [
            Tool(
                "session_history",
                "Read this chat's earlier raw messages, including those compacted away "
                "(newest last).",
                HistoryArguments,
                self.history,
                status=N_("📜 reading our earlier messages…"),
            ),
            Tool(
                "session_search",
                "Keyword search in this chat's compacted-away messages; returns time, role "
                "and text.",
                SearchArguments,
                self.search,
                status=N_("🔎 searching our earlier messages…"),
            ),
            Tool(
                "read_tool_result",
                "Read a large tool result that was saved to disk, one page at a time.",
                ReadResultArguments,
                self.read_result,
                status=N_("📄 reading a saved result…"),
            ),
        ]

    def history(self, arguments: HistoryArguments, ctx: TurnContext) -> str:
        key = ctx.session.id
        entries = _kept_out(
            read_history(self.sessions.offload_path_for(key), ctx.session.messages),
            self.forgotten(ctx.scope),
        )
        end = len(entries) - arguments.before
        chosen = entries[max(0, end - arguments.count) : max(0, end)]
        return _format(chosen) or "(no messages)"

    def search(self, arguments: SearchArguments, ctx: TurnContext) -> str:
        found = search_history(
            [self.sessions.offload_path_for(ctx.session.id)], arguments.query, limit=arguments.limit
        )
        return _format(_kept_out(found, self.forgotten(ctx.scope))) or (
            "(no matching messages in this chat's log)"
        )

    def read_result(self, arguments: ReadResultArguments, ctx: TurnContext) -> str:
        page = self.large_results.read_page(
            ctx.session.id, arguments.result_id, arguments.offset, PAGE_CHARS
        )
        if page is None:
            raise ToolError(f"no saved result {arguments.result_id!r} in this chat")
        return self.forgotten(ctx.scope).keep_lines(page)
