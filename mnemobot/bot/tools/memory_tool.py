"""The `memory` tool: the model's hands on the current chat's memory, and nothing else.

Every operation works in the scope of the turn's chat (`ctx.scope`); ids of items in
other scopes are simply not found.

`forget` takes an id, or a query ("locker code") when the user says in plain words what
to forget: every item, MEMORY.md line and note line holding all its words goes, with the
turns and facts that go with them. The answer lists what was removed, so the reply can
say it. The text is hidden at once (and taken out of this conversation); the files are
rewritten by the next maintenance, which `on_forgotten` asks for.

`add`, `update` and `promote` write through `MemoryRecord` like a turn's memory: the
tool's facts are weighed as `memory.write.fact_items` says (above extracted ones), a repeat merges
into the stored fact, and a new value of a single-valued thing ("I moved to Berlin")
marks the old one earlier. Every call runs in the memory's worker threads.

In a group, what takes away from or rewrites the group's memory (`forget`, `update`,
`write_file`) is for those `permissions.editMemory` names (`may_edit`); `add`, `promote`
and `append_file` only add, and are everyone's, like what each member says.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.base.clock import SYSTEM_CLOCK, Clock, to_iso
from mnemobot.base.counts import counted
from mnemobot.bot.i18n import N_
from mnemobot.bot.tools.edit_guard import EditRefusal, check_may_edit
from mnemobot.memory.notes.daily_notes import MemoryFileTooLong
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.kept_refs import MAX_MESSAGE_REFS, is_message_ref
from mnemobot.memory.upkeep.forgotten_texts import FORGET_QUERY_MAX_ITEMS
from mnemobot.memory.write.fact_items import MAX_ITEM_CHARS, model_tags
from mnemobot.systems.core.context import TurnContext, sole_speaker
from mnemobot.systems.core.tool_runner import Tool, ToolError

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
    id: str | None = Field(
        None,
        description="read/update/promote/forget: the item id (read: or an excerpt's ref).",
    )
    tags: list[str] = Field(default_factory=list)


def _line(item: MemoryItem, score: float | None = None, updated: float | None = None) -> str:
    """`updated`: when a newer statement found beside it changed what it says."""
    head = f"{item.id} [{item.layer.value.lower()}/{item.type.value.lower()}]"
    if score is not None:
        head += f" score={score:.2f}"
    if item.valid_to is not None:
        head += f" (earlier, until {to_iso(item.valid_to)[:10]})"
    elif item.is_superseded:
        head += " (earlier: replaced)"
    elif updated is not None:
        head += f" (earlier: updated {to_iso(updated)[:10]})"
    return f"{head}: {item.content}"


_WRITES = frozenset({"add", "update", "promote", "write_file", "append_file"})
# What takes away from or rewrites the chat's memory (permissions.editMemory in a group).
_EDITS = {
    "forget": "have memory forgotten",
    "update": "rewrite remembered facts",
    "write_file": "replace the chat's MEMORY.md notes",
}


def memory_status(arguments: dict[str, object]) -> str:
    """The line a user sees while the model uses its memory, by what it does."""
    operation = arguments.get("operation")
    if operation in _WRITES:
        return N_("📝 saving to memory…")
    if operation == "forget":
        return N_("🧹 forgetting…")
    return N_("🔎 searching memory…")


def _removed_line(item: MemoryItem) -> str:
    return f"- [{item.layer.value.lower()}/{item.type.value.lower()}] {item.title}"


def forget_receipt(items: list[MemoryItem], lines: int, *, erased_later: bool = True) -> str:
    """What was forgotten, and where it goes from: the memory tool's answer, and what the
    web page shows after a forget (`erased_later` False: the page erases at once and says
    what that did below)."""
    parts = [f"forgotten {counted(len(items), 'item')}"]
    if lines:
        parts.append(f"{counted(lines, 'line')} of MEMORY.md and the daily notes")
    listed = "\n".join(_removed_line(item) for item in items[:FORGET_LISTED])
    more = f"\n- ... and {len(items) - FORGET_LISTED} more" if len(items) > FORGET_LISTED else ""
    return (
        " and ".join(parts)
        + ". Hidden now and taken out of this conversation"
        + (
            "; erased from every file (notes, MEMORY.md, sessions, logs) by the next memory "
            "maintenance"
            if erased_later
            else ""
        )
        + ". Removed:\n"
        + (listed + more if listed else "(memory-file lines only)")
    )


class MemoryTool:
    def __init__(
        self,
        memory: WorkspaceMemory,
        *,
        on_forgotten: Callable[[str], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        may_edit: EditRefusal | None = None,
    ) -> None:
        """`on_forgotten(scope)`: something of the scope was forgotten (erase it soon).
        `clock`: the time of a fact saved in a turn that does not say when it happened.
        `may_edit(chat)`: why its user may not forget or rewrite its memory (None: may)."""
        # Every role: the tool recalls, records and forgets.
        self.recall, self.record, self.forget = memory.recall, memory.record, memory.forget
        self.scopes = memory.scopes
        self.on_forgotten = on_forgotten
        self.clock = clock
        self.may_edit = may_edit

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
            status=memory_status,
            brief="Long-term memory: add a fact (content), search (query), forget (id or query).",
        )

    async def handle(self, arguments: MemoryArguments, ctx: TurnContext) -> str:
        """Every read and write of the scope runs in the memory's worker threads (a cold
        scope loads first); only the answer and the conversation's redaction run here."""
        if not ctx.config.memory.enabled:
            raise ToolError("memory is turned off in the runtime config (memory.enabled)")
        operation = arguments.operation
        if operation in _EDITS:
            await check_may_edit(self.may_edit, ctx, _EDITS[operation])
        if operation in {"add", "update"}:
            self._fits(arguments.content, MAX_ITEM_CHARS)
        if operation == "add":
            return await self._add(arguments, ctx)
        if operation == "search":
            query = self._need(arguments.query or arguments.content, "query")
            work = partial(self.recall.marked_search, ctx.scope, query)
            hits = await self.scopes.run(ctx.scope, work)
            lines = (_line(item, score, hits.updated.get(item.id)) for item, score in hits.found)
            return "\n".join(lines) or "(nothing found)"
        if operation == "forget" and not arguments.id:
            query = self._need(arguments.query or arguments.content, "id or query")
            return await self._forget_matching(ctx, query)
        if operation in {"read", "update", "promote", "forget"}:
            return await self._by_id(operation, arguments, ctx)
        return await self._memory_file(arguments, ctx)

    def _turn_time(self, ctx: TurnContext) -> float:
        # The turn's own time, as its other memory is dated: a fact saved in a turn and the
        # same fact extracted from that turn are one statement, said once.
        return ctx.occurred_at if ctx.occurred_at is not None else self.clock()

    async def _add(self, arguments: MemoryArguments, ctx: TurnContext) -> str:
        work = partial(
            self.record.add_fact,
            ctx.scope,
            self._need(arguments.content, "content"),
            item_type=_DURABLE_TYPES[arguments.kind],
            at=self._turn_time(ctx),
            config=ctx.config.memory,
            speaker=ctx.chat.user_name,
            tags=[*model_tags(arguments.tags), "from:tool"],
            references=ctx.message_refs,
            sole_speaker=sole_speaker(ctx.chat, ctx.config),
        )
        written = await self.scopes.run(ctx.scope, work, write=True)
        if not written.stored:
            return "not saved: this fact was forgotten earlier at the user's request"
        answer = f"saved {_line(written.stored[0])}"
        replaced = [i for i in written.updates.superseded if i.layer is not Layer.EPISODIC]
        if replaced:
            answer += "\nit replaces (now marked earlier):\n" + "\n".join(map(_line, replaced))
        return answer

    async def _by_id(self, operation: str, arguments: MemoryArguments, ctx: TurnContext) -> str:
        item_id = self._need(arguments.id, "id")
        item = await self.scopes.run(ctx.scope, partial(self.recall.get, ctx.scope, item_id))
        # Only a message's ref ("tg:42", as an excerpt names it) is looked for among the
        # messages: that reads the scope's items, seconds for a big scope's made-up id.
        if item is None and operation == "read" and ":" in item_id:
            whole = await self.scopes.run(
                ctx.scope, partial(self.recall.message_text, ctx.scope, item_id)
            )
            if whole is not None:
                return f"message {item_id}:\n{whole}"
        if item is None:
            raise ToolError(f"no memory item or message {item_id!r} in this chat")
        if operation == "read":
            return _line(item) + f"\nreferences: {_references(item)}"
        if operation == "forget":
            work = partial(self.forget.forget_items, ctx.scope, item_id)
            gone = await self.scopes.run(ctx.scope, work, write=True)
            await self._forgotten(ctx)
            return forget_receipt(gone, 0)
        at = self._turn_time(ctx)
        if operation == "promote":
            promote = partial(
                self.record.promote, ctx.scope, item_id, at=at, config=ctx.config.memory
            )
            promoted = await self.scopes.run(ctx.scope, promote, write=True)
            return f"promoted to {_line(promoted)}" if promoted else "already durable"
        rewrite = partial(
            self.record.rewrite_fact,
            ctx.scope,
            item_id,
            content=self._need(arguments.content, "content"),
            tags=arguments.tags or None,
            at=at,
            config=ctx.config.memory,
            rewriter=ctx.chat.user_name,
            references=ctx.message_refs,
        )
        try:
            written = await self.scopes.run(ctx.scope, rewrite, write=True)
        except ValueError as exc:
            raise ToolError(f"not updated: {exc}") from None
        if not written.stored:
            return "not updated"
        answer = f"updated {_line(written.stored[0])}"
        replaced = [i for i in written.updates.superseded if i.layer is not Layer.EPISODIC]
        if replaced:
            answer += "\nthe value it had (now marked earlier):\n" + "\n".join(map(_line, replaced))
        return answer

    async def _forget_matching(self, ctx: TurnContext, query: str) -> str:
        work = partial(self.forget.forget_matching, ctx.scope, query)
        outcome = await self.scopes.run(ctx.scope, work, write=True)
        if outcome.too_many:
            return (
                f"nothing forgotten: {outcome.too_many} items hold all of {query!r}, more than "
                f"{FORGET_QUERY_MAX_ITEMS}; use more specific words, or forget by id"
            )
        if not outcome.items and not outcome.lines:
            return f"nothing in this chat's memory holds all of {query!r}"
        await self._forgotten(ctx)
        return forget_receipt(outcome.items, outcome.lines)

    async def _forgotten(self, ctx: TurnContext) -> None:
        """Take the forgotten texts out of this conversation now, and ask for the erasure
        of every file."""
        work = partial(self.forget.forgotten_texts, ctx.scope)
        texts = await self.scopes.run(ctx.scope, work)
        for message in ctx.session.messages:
            content = message.get("content")
            if isinstance(content, str) and texts.holds(content):
                message["content"] = texts.redact(content)
        if self.on_forgotten is not None:
            self.on_forgotten(ctx.scope)

    async def _memory_file(self, arguments: MemoryArguments, ctx: TurnContext) -> str:
        if arguments.operation == "read_file":
            budget = ctx.config.memory.scope_memory_budget_tokens
            work = partial(self.recall.scope_memory_text, ctx.scope, budget)
            return await self.scopes.run(ctx.scope, work) or "(empty)"
        write_file = partial(
            self.record.write_memory_file,
            ctx.scope,
            self._need(arguments.content, "content"),
            append=arguments.operation == "append_file",
            max_chars=MEMORY_FILE_MAX_CHARS,
        )
        try:
            written = await self.scopes.run(ctx.scope, write_file, write=True)
        except MemoryFileTooLong as exc:
            raise ToolError(str(exc)) from None
        return f"MEMORY.md of this chat now has {written} characters"

    @staticmethod
    def _fits(content: str | None, max_chars: int) -> None:
        if content is not None and len(content) > max_chars:
            raise ToolError(
                f"not saved: {len(content):,} characters, and one memory item holds at most "
                f"{max_chars:,}; save a short summary instead, or keep "
                "long text in a file"
            )

    @staticmethod
    def _need(value: str | None, name: str) -> str:
        if value is None or not value.strip():
            raise ToolError(f"this operation needs `{name}`")
        return value.strip()


def _references(item: MemoryItem) -> str:
    """An item's refs; with how often it was said when it names only some of the messages
    (a message repeated: the first and the latest, `memory.store.kept_refs`)."""
    named = sum(map(is_message_ref, item.references))
    said = f" (said {item.mentions} times; the first and latest named)"
    some = named >= MAX_MESSAGE_REFS and item.mentions > named
    return (", ".join(item.references) or "-") + (said if some else "")
