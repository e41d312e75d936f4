"""The `memory` tool: the model's hands on the current chat's memory, and nothing else.

Every operation works in the scope of the turn's chat (`ctx.scope`); ids of items in
other scopes are simply not found.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.bot.tools.registry import Tool
from mnemobot.memory.daily_notes import MemoryFileTooLong, read_memory_file, write_memory_file
from mnemobot.memory.item_store import new_item_id
from mnemobot.memory.items import ItemType, Layer, MemoryItem, to_iso
from mnemobot.memory.service import MemoryService
from mnemobot.systems.context import TurnContext
from mnemobot.systems.tool_runner import ToolError

MEMORY_FILE_MAX_CHARS = 40_000
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
    query: str | None = Field(None, description="search: keywords.")
    id: str | None = Field(None, description="read/update/promote/forget: the item id.")
    tags: list[str] = Field(default_factory=list)


def _line(item: MemoryItem, score: float | None = None) -> str:
    head = f"{item.id} [{item.layer.value.lower()}/{item.type.value.lower()}]"
    if score is not None:
        head += f" score={score:.2f}"
    if item.valid_to is not None:
        head += f" (earlier, until {to_iso(item.valid_to)[:10]})"
    return f"{head}: {item.content}"


class MemoryTool:
    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    def tool(self) -> Tool:
        return Tool(
            name="memory",
            description=(
                "Your long-term memory of this chat. add: save a durable fact (kind: "
                "preference|fact|decision|constraint|task|procedure). search: find items by "
                "keywords. read/update/promote/forget: by id. read_file/write_file/append_file: "
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
        if operation in {"read", "update", "promote", "forget"}:
            item_id = self._need(arguments.id, "id")
            item = store.get(item_id)
            if item is None:
                raise ToolError(f"no memory item {item_id!r} in this chat")
            if operation == "read":
                return _line(item) + f"\nreferences: {', '.join(item.references) or '-'}"
            if operation == "forget":
                gone = self.memory.forget(ctx.scope, item_id)
                return (
                    f"forgotten {item_id} (and {len(gone) - 1} related); hidden now, erased "
                    "from every file at the next memory maintenance"
                )
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
