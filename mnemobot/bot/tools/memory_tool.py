"""The `memory` tool: the model's hands on the current chat's memory, and nothing else.

Every operation works in the scope of the turn's chat (`ctx.scope`); ids of items in
other scopes are simply not found.

`forget` takes an id, or a query ("locker code") when the user says in plain words what
to forget: every item, MEMORY.md line and note line holding all its words goes, with the
turns and facts that go with them. The answer lists what was removed, so the reply can
say it. The text is hidden at once (and taken out of this conversation); the files are
rewritten by the next maintenance, which `on_forgotten` asks for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.memory.daily_notes import MemoryFileTooLong, read_memory_file, write_memory_file
from mnemobot.memory.forgotten_texts import FORGET_QUERY_MAX_ITEMS
from mnemobot.memory.item_store import new_item_id
from mnemobot.memory.items import ItemType, Layer, MemoryItem, to_iso
from mnemobot.memory.service import MemoryService
from mnemobot.systems.context import TurnContext
from mnemobot.systems.tool_runner import Tool, ToolError

MEMORY_FILE_MAX_CHARS = 40_000
# Removed items the answer lists by title; the rest are counted.
FORGET_LISTED = 10
_DURABLE_TYPES = {
    "preference": ItemType.PREFERENCE,
    "fact": ItemType.PROJECT_FACT,
    "decision": ItemType.DECISION,
    "constraint": ItemType.CONSTRAINT,
    "task": ItemType.TASK_STATE,
    "procedure": ItemType.FIX,
}


class MemoryArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operation: Literal[
        "add",
        "search",
        "read",
        "update",
        "promote",
        "forget",
        "read_file",
        "write_file",
        "append_file",
    ]
    content: str | None = Field(
        None, description="add/update: the fact, one self-contained sentence; *_file: text."
    )
    kind: Literal["preference", "fact", "decision", "constraint", "task", "procedure"] = Field(
        "fact", description="add: what kind of memory this is."
    )
    query: str | None = Field(
        None,
        description="search: keywords. forget: the words of what to forget (e.g. 'locker "
        "code'), when there is no id; every item holding all of them is forgotten.",
    )
    id: str | None = Field(None, description="read/update/promote/forget: the item id.")
    tags: list[str] = Field(default_factory=list)


def _line(item: MemoryItem, score: float | None = None) -> str:
    head = f"{item.id} [{item.layer.value.lower()}/{item.type.value.lower()}]"
    if score is not None:
        head += f" score={score:.2f}"
    if item.valid_to is not None:
        head += f" (earlier, until {to_iso(item.valid_to)[:10]})"
    return f"{head}: {item.content}"


def _removed_line(item: MemoryItem) -> str:
    return f"- [{item.layer.value.lower()}/{item.type.value.lower()}] {item.title}"


class MemoryTool:
    def __init__(
        self, memory: MemoryService, *, on_forgotten: Callable[[str], None] | None = None
    ) -> None:
        """`on_forgotten(scope)`: something of the scope was forgotten (erase it soon)."""
        self.memory = memory
        self.on_forgotten = on_forgotten

    def tool(self) -> Tool:
        return Tool(
            name="memory",
            description=(
                "Your long-term memory of this chat. add: save a durable fact (kind: "
                "preference|fact|decision|constraint|task|procedure). search: find items by "
                "keywords. forget: by id, or by query (the words of what the user wants "
                "forgotten). read/update/promote: by id. read_file/write_file/append_file: "
                "this chat's MEMORY.md notes, shown to you in every turn."
            ),
            arguments=MemoryArguments,
            handler=self.handle,
        )

    def handle(self, arguments: MemoryArguments, ctx: TurnContext) -> str:
        if not ctx.config.memory.enabled:
            raise ToolError("memory is turned off in the runtime config (memory.enabled)")
        operation = arguments.operation
        store = self.memory.store(ctx.scope)
        if operation in {"add", "update"}:
            self._fits(arguments.content, ctx.config.memory.max_item_chars)
        if operation == "add":
            content = self._need(arguments.content, "content")
            kind = _DURABLE_TYPES[arguments.kind]
            now = time.time()
            item = MemoryItem(
                id=new_item_id(),
                layer=Layer.PROCEDURAL if arguments.kind == "procedure" else Layer.SEMANTIC,
                type=kind,
                title=content[:80],
                content=content,
                scope=ctx.scope,
                created_at=now,
                updated_at=now,
                tags=[*arguments.tags, "from:tool"],
                references=list(ctx.message_refs),
                source="tool",
                confidence=0.9,
                salience=0.7,
            )
            stored = store.add([item])
            if not stored:
                return "not saved: this fact was forgotten earlier at the user's request"
            return f"saved {_line(stored[0])}"
        if operation == "search":
            query = self._need(arguments.query or arguments.content, "query")
            found = self.memory.search(
                ctx.scope,
                query,
                config=ctx.config.memory,
                tz=ctx.now.tzinfo or ctx.config.assistant.tzinfo(),
            )
            return "\n".join(_line(item, score) for item, score in found) or "(nothing found)"
        if operation == "forget" and not arguments.id:
            query = self._need(arguments.query or arguments.content, "id or query")
            return self._forget_matching(ctx, query)
        if operation in {"read", "update", "promote", "forget"}:
            item_id = self._need(arguments.id, "id")
            item = store.get(item_id)
            if item is None:
                raise ToolError(f"no memory item {item_id!r} in this chat")
            if operation == "read":
                return _line(item) + f"\nreferences: {', '.join(item.references) or '-'}"
            if operation == "forget":
                gone = self.memory.forget_items(ctx.scope, item_id)
                self._forgotten(ctx)
                return self._removed(gone, 0)
            if operation == "promote":
                promoted = store.promote(item_id)
                return f"promoted to {_line(promoted)}" if promoted else "already durable"
            updated = store.update(
                item_id,
                content=self._need(arguments.content, "content"),
                tags=arguments.tags or None,
            )
            return f"updated {_line(updated)}" if updated else "not updated"
        return self._memory_file(arguments, ctx)

    def _forget_matching(self, ctx: TurnContext, query: str) -> str:
        outcome = self.memory.forget_matching(ctx.scope, query)
        if outcome.too_many:
            return (
                f"nothing forgotten: {outcome.too_many} items hold all of {query!r}, more than "
                f"{FORGET_QUERY_MAX_ITEMS}; use more specific words, or forget by id"
            )
        if not outcome.items and not outcome.lines:
            return f"nothing in this chat's memory holds all of {query!r}"
        self._forgotten(ctx)
        return self._removed(outcome.items, outcome.lines)

    def _forgotten(self, ctx: TurnContext) -> None:
        """Take the forgotten texts out of this conversation now, and ask for the erasure
        of every file."""
        texts = self.memory.forgotten_texts(ctx.scope)
        for message in ctx.session.messages:
            content = message.get("content")
            if isinstance(content, str) and texts.holds(content):
                message["content"] = texts.redact(content)
        if self.on_forgotten is not None:
            self.on_forgotten(ctx.scope)

    @staticmethod
    def _removed(items: list[MemoryItem], lines: int) -> str:
        parts = [f"forgotten {len(items)} items"]
        if lines:
            parts.append(f"{lines} lines of MEMORY.md and the daily notes")
        listed = "\n".join(_removed_line(item) for item in items[:FORGET_LISTED])
        more = (
            f"\n- ... and {len(items) - FORGET_LISTED} more" if len(items) > FORGET_LISTED else ""
        )
        return (
            " and ".join(parts)
            + ". Hidden now and taken out of this conversation; erased from every file "
            "(notes, MEMORY.md, sessions, logs) by the next memory maintenance. Removed:\n"
            + (listed + more if listed else "(memory-file lines only)")
        )

    def _memory_file(self, arguments: MemoryArguments, ctx: TurnContext) -> str:
        path = self.memory.paths(ctx.scope).memory_file
        if arguments.operation == "read_file":
            return read_memory_file(path, ctx.config.memory.scope_memory_budget_tokens) or "(empty)"
        text = self._need(arguments.content, "content")
        try:
            written = write_memory_file(
                path,
                text,
                append=arguments.operation == "append_file",
                max_chars=MEMORY_FILE_MAX_CHARS,
            )
        except MemoryFileTooLong as exc:
            raise ToolError(str(exc)) from None
        return f"MEMORY.md of this chat now has {written} characters"

    @staticmethod
    def _fits(content: str | None, max_chars: int) -> None:
        if content is not None and len(content) > max_chars:
            raise ToolError(
                f"not saved: {len(content):,} characters, and one memory item holds at most "
                f"{max_chars:,} (memory.maxItemChars); save a short summary instead, or keep "
                "long text in a file"
            )

    @staticmethod
    def _need(value: str | None, name: str) -> str:
        if value is None or not value.strip():
            raise ToolError(f"this operation needs `{name}`")
        return value.strip()
