"""The pages that read: chats, a chat's overview, its facts, items, notes and MEMORY.md,
and Ask. Each gathers what it shows in one call in memory's worker threads (a cold scope
loads there, never on the event loop) and renders a template."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import datetime
from functools import partial
from typing import Any

from aiohttp import web

from mnemobot.bot.schedule.reminders import task_line
from mnemobot.bot.web.ask import MAX_QUESTION_CHARS, ask
from mnemobot.bot.web.chat_list import ChatList
from mnemobot.bot.web.chat_memory import FactBook, ItemQuery, find_items, scope_items
from mnemobot.bot.web.host import WebHost
from mnemobot.bot.web.memory_files import (
    CURRENT,
    diff_lines,
    memory_text,
    memory_versions,
    note_days,
    note_lines,
)
from mnemobot.bot.web.paging import page_of
from mnemobot.bot.web.rendering import Formats, Renderer, scope_of
from mnemobot.bot.web.timeline import DEFAULT_DAYS, chart, per_day
from mnemobot.memory.store.items import ItemType, Layer
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.forgetting import conversation_files
from mnemobot.memory.upkeep.maintenance import last_report

# Standing preferences the overview lists before "all of them" (the facts page).
OVERVIEW_PREFERENCES = 10
FACT_KINDS = ("facts", "preferences", "earlier")


class ReadPages:
    def __init__(self, host: WebHost, renderer: Renderer) -> None:
        self.host = host
        self.renderer = renderer
        self.chat_list = ChatList(host.paths, host.memory)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self.chats),
            web.get("/chat/{scope}", self.overview),
            web.get("/chat/{scope}/facts", self.facts),
            web.get("/chat/{scope}/items", self.items),
            web.get("/chat/{scope}/notes", self.notes),
            web.get("/chat/{scope}/memory", self.memory_file),
            web.get("/chat/{scope}/ask", self.ask),
        ]

    def _scope(self, request: web.Request) -> str:
        return scope_of(request, self.renderer, self.host.paths.memory)

    def _formats(self) -> Formats:
        return Formats(self.host.runtime.current().assistant.tzinfo())

    async def _offload(self, scope: str, work: Any) -> Any:
        return await self.host.memory.scopes.run(scope, work)

    # ------------------------------------------------------------------ chats

    async def chats(self, request: web.Request) -> web.Response:
        summaries = await asyncio.to_thread(self.chat_list.summaries)
        wanted = request.query.get("q", "").strip().casefold()
        if wanted:
            summaries = [s for s in summaries if wanted in s.chat.casefold()]
        page = page_of(request.query.get("page"), len(summaries))
        return self.renderer.page(
            "chats.html",
            chats=page.of(summaries),
            page=page,
            q=request.query.get("q", ""),
            fmt=self._formats(),
        )

    # --------------------------------------------------------------- overview

    async def overview(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        config = self.host.runtime.current()
        formats = self._formats()
        try:
            days = int(request.query.get("days", DEFAULT_DAYS))
        except ValueError:
            days = DEFAULT_DAYS
        today = datetime.fromtimestamp(self.host.clock(), formats.tz).date()

        def gather() -> dict[str, Any]:
            memory = self.host.memory
            items = scope_items(memory, scope)
            book = FactBook(items)
            preferences = book.current(preferences=True)
            paths = ScopePaths(self.host.paths.root, scope)
            forgotten = memory.forget.forgotten_texts(scope)
            report = last_report(paths)
            return {
                "per_layer": Counter(item.layer.value for item in items),
                "per_type": Counter(item.type.value for item in items),
                "total": len(items),
                "facts": len(book.current(preferences=False)),
                "preferences": preferences[:OVERVIEW_PREFERENCES],
                "preference_count": len(preferences),
                "chart": chart(per_day(items, formats.tz), today, days),
                "memory_md": memory_text(paths, CURRENT, forgotten),
                "pending_erasure": len(forgotten.needles),
                "maintenance": report.lines() if report is not None else [],
                "chat_keys": sorted({scope, *conversation_files(self.host.paths.root, scope)}),
            }

        found = await self._offload(scope, gather)
        tasks = []
        store = self.host.tasks()
        now = self.host.clock()
        for key in found.pop("chat_keys"):
            tasks += [(key, task_line(task, now)) for task in await store.tasks(key)]
        return self.renderer.page(
            "chat_overview.html",
            scope=scope,
            tab="overview",
            fmt=formats,
            tasks=tasks,
            days=days,
            memory_enabled=config.memory.enabled,
            **found,
        )

    # ------------------------------------------------------------------ facts

    async def facts(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        kind = request.query.get("kind", "facts")
        kind = kind if kind in FACT_KINDS else "facts"
        text = request.query.get("q", "").strip()

        def gather() -> dict[str, Any]:
            book = FactBook(scope_items(self.host.memory, scope))
            if kind == "earlier":
                rows = book.no_longer_current(text)
            else:
                rows = book.current(preferences=kind == "preferences", text=text)
            page = page_of(request.query.get("page"), len(rows))
            return {"histories": [book.history(row) for row in page.of(rows)], "page": page}

        found = await self._offload(scope, gather)
        return self.renderer.page(
            "chat_facts.html",
            scope=scope,
            tab="facts",
            kind=kind,
            q=text,
            fmt=self._formats(),
            **found,
        )

    # ------------------------------------------------------------------ items

    async def items(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        config = self.host.runtime.current()
        query = ItemQuery.of(request.query)
        work = partial(
            find_items, self.host.memory, scope, query, config.memory, config.assistant.tzinfo()
        )
        found = await self._offload(scope, work)
        page = page_of(request.query.get("page"), len(found))
        return self.renderer.page(
            "chat_items.html",
            scope=scope,
            tab="items",
            items=page.of(found),
            page=page,
            query=query,
            layers=[layer.value for layer in Layer],
            types=[item_type.value for item_type in ItemType],
            fmt=self._formats(),
        )

    # ------------------------------------------------------------------ notes

    async def notes(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        paths = ScopePaths(self.host.paths.root, scope)

        def gather() -> dict[str, Any]:
            days = note_days(paths)
            wanted = request.query.get("day") or (days[0].day if days else "")
            chosen = next((day for day in days if day.day == wanted), None)
            forgotten = self.host.memory.forget.forgotten_texts(scope)
            page = page_of(request.query.get("page"), len(days))
            return {
                "days": page.of(days),
                "page": page,
                "day": chosen,
                "lines": note_lines(chosen, forgotten) if chosen else [],
            }

        found = await self._offload(scope, gather)
        return self.renderer.page("chat_notes.html", scope=scope, tab="notes", **found)

    # -------------------------------------------------------------- MEMORY.md

    async def memory_file(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        paths = ScopePaths(self.host.paths.root, scope)

        def gather() -> dict[str, Any]:
            versions = memory_versions(paths)
            names = [version.name for version in versions]
            forgotten = self.host.memory.forget.forgotten_texts(scope)
            new = request.query.get("b") or (names[0] if names else CURRENT)
            older = [name for name in names if name != new]
            old = request.query.get("a") or (older[0] if older else new)
            old_text = memory_text(paths, old, forgotten)
            new_text = memory_text(paths, new, forgotten)
            diff = None
            if old_text is not None and new_text is not None and old != new:
                diff = diff_lines(old_text, new_text)
            return {
                "versions": versions,
                "a": old,
                "b": new,
                "diff": diff,
                "current": memory_text(paths, CURRENT, forgotten),
                "shown": new_text,
            }

        found = await self._offload(scope, gather)
        return self.renderer.page(
            "chat_memory.html", scope=scope, tab="memory", fmt=self._formats(), **found
        )

    # -------------------------------------------------------------------- ask

    async def ask(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        question = request.query.get("q", "").strip()
        fresh = request.query.get("fresh") == "1"
        answer = await ask(self.host, scope, question, fresh=fresh) if question else None
        return self.renderer.page(
            "chat_ask.html",
            scope=scope,
            tab="ask",
            q=question,
            fresh=fresh,
            answer=answer,
            max_chars=MAX_QUESTION_CHARS,
        )
