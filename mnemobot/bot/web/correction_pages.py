"""The pages that change memory: forget an item or a fact, restore a MEMORY.md version.

Each is two steps: a GET shows what will change and asks to confirm; the confirmation is a
POST carrying the page's CSRF token and `confirm=yes`. A form without a valid token is
refused (403) and changes nothing; with `--read-only`, both steps say corrections are off.
"""

from __future__ import annotations

from functools import partial

from aiohttp import web

from mnemobot.bot.web.access import Access, who
from mnemobot.bot.web.corrections import CorrectionRefused, Corrections
from mnemobot.bot.web.host import WebHost
from mnemobot.bot.web.memory_files import CURRENT, diff_lines, memory_text
from mnemobot.bot.web.rendering import Formats, Renderer, scope_of
from mnemobot.memory.notes.memory_versions import find_version
from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.forgotten_texts import items_to_forget

STALE_FORM = (
    "This form is stale or came from another page (its check token does not match). "
    "Nothing was changed: go back, reload the page and try again."
)
NOT_CONFIRMED = "Nothing was changed: the change needs its confirmation (the button on the page)."


def going_with(host: WebHost, scope: str, item_id: str) -> list[MemoryItem] | None:
    """The item and whatever would go with it (the memory tool's rule); None if unknown."""
    memory = host.memory
    with memory.scopes.lock(scope):
        store = memory.scopes.store(scope)
        item = store.get(item_id)
        if item is None:
            return None
        going, _ = items_to_forget(store.items.values(), item, PROMOTED_FROM_PREFIX)
    return sorted(going, key=lambda other: other.id != item_id)


class CorrectionPages:
    def __init__(
        self, host: WebHost, renderer: Renderer, access: Access, corrections: Corrections
    ) -> None:
        self.host = host
        self.renderer = renderer
        self.access = access
        self.corrections = corrections

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/chat/{scope}/forget/{item_id}", self.confirm_forget),
            web.post("/chat/{scope}/forget/{item_id}", self.forget),
            web.get("/chat/{scope}/restore/{version}", self.confirm_restore),
            web.post("/chat/{scope}/restore/{version}", self.restore),
        ]

    def _scope(self, request: web.Request) -> str:
        return scope_of(request, self.renderer, self.host.paths.memory)

    def _refused(self, scope: str, why: str, status: int = 403) -> web.Response:
        return self.renderer.message("Not changed", why, status, scope=scope)

    async def _checked_form(self, request: web.Request, scope: str) -> web.Response | None:
        """None when the form may change memory, else the page saying why not."""
        refused = self.corrections.refusal()
        if refused:
            return self._refused(scope, refused)
        form = await request.post()
        csrf = form.get("csrf")
        if not self.access.csrf_ok(who(request), csrf if isinstance(csrf, str) else None):
            return self._refused(scope, STALE_FORM)
        if form.get("confirm") != "yes":
            return self._refused(scope, NOT_CONFIRMED, 400)
        return None

    # ----------------------------------------------------------------- forget

    async def confirm_forget(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        refused = self.corrections.refusal() or self.host.corrections_refused()
        if refused:
            return self._refused(scope, refused)
        item_id = request.match_info["item_id"]
        work = partial(going_with, self.host, scope, item_id)
        going = await self.host.memory.scopes.run(scope, work)
        if going is None:
            return self._refused(scope, f"No memory item {item_id} in {scope}.", 404)
        tz = self.host.runtime.current().assistant.tzinfo()
        return self.renderer.page(
            "confirm_forget.html",
            scope=scope,
            item=going[0],
            others=going[1:],
            csrf=self.access.csrf_token(who(request)),
            fmt=Formats(tz),
        )

    async def forget(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        problem = await self._checked_form(request, scope)
        if problem is not None:
            return problem
        try:
            done = await self.corrections.forget(scope, request.match_info["item_id"], who(request))
        except CorrectionRefused as refusal:
            return self._refused(scope, str(refusal), 409)
        return self.renderer.page(
            "done.html", scope=scope, title="Forgotten", text=done.receipt, lines=done.erasure
        )

    # ---------------------------------------------------------------- restore

    async def confirm_restore(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        refused = self.corrections.refusal()
        if refused:
            return self._refused(scope, refused)
        name = request.match_info["version"]
        paths = ScopePaths(self.host.paths.root, scope)

        def gather() -> tuple[str, str] | None:
            version = find_version(paths, name)
            if version is None:
                return None
            forgotten = self.host.memory.forget.forgotten_texts(scope)
            return memory_text(paths, CURRENT, forgotten) or "", memory_text(
                paths, version.version, forgotten
            ) or ""

        texts = await self.host.memory.scopes.run(scope, gather)
        if texts is None:
            return self._refused(scope, f"No version {name!r} of MEMORY.md in {scope}.", 404)
        current, restored = texts
        return self.renderer.page(
            "confirm_restore.html",
            scope=scope,
            version=name,
            diff=diff_lines(current, restored),
            csrf=self.access.csrf_token(who(request)),
        )

    async def restore(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        problem = await self._checked_form(request, scope)
        if problem is not None:
            return problem
        try:
            line = await self.corrections.restore(
                scope, request.match_info["version"], who(request)
            )
        except CorrectionRefused as refusal:
            return self._refused(scope, str(refusal), 409)
        return self.renderer.page("done.html", scope=scope, title="Restored", text=line, lines=[])
