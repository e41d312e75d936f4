"""Pages from templates: Jinja2 with every value escaped and every text redacted.

`finalize` runs on everything a template prints, before escaping: no template can show a
secret by forgetting a filter. The only Markup is what the templates' own macros render
(their values went through `finalize` inside them); none is built in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from mnemobot.memory.store.items import how_item_stated
from mnemobot.memory.store.scope_paths import validate_scope_key

HTML = "text/html"


def chat_url(scope: str, sub: str = "", **params: object) -> str:
    """`/chat/<scope>[/sub][?params]`; empty parameters are left out."""
    url = "/chat/" + quote(scope, safe=":@") + (f"/{sub}" if sub else "")
    kept = {name: value for name, value in params.items() if value not in (None, "")}
    return f"{url}?{urlencode(kept)}" if kept else url


def cut(text: str, limit: int) -> str:
    """`text` up to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


@dataclass(frozen=True, slots=True)
class Formats:
    """Times as the chat reads them: in the assistant's time zone."""

    tz: tzinfo

    def when(self, ts: float | None) -> str:
        if ts is None:
            return "-"
        return datetime.fromtimestamp(ts, self.tz).strftime("%Y-%m-%d %H:%M")

    def day(self, ts: float | None) -> str:
        return "-" if ts is None else datetime.fromtimestamp(ts, self.tz).strftime("%Y-%m-%d")


class Renderer:
    def __init__(self, redact: Callable[[str], str], globals_: Mapping[str, Any]) -> None:
        def finalize(value: object) -> object:
            # Markup is what a macro of ours rendered: its values went through here already.
            if isinstance(value, str) and not isinstance(value, Markup):
                return redact(value)
            return value

        self.env = Environment(
            loader=PackageLoader("mnemobot.bot.web", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            finalize=finalize,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )

        def redacted_url(scope: str, sub: str = "", **params: object) -> str:
            # A link's parameters are percent-encoded, and a secret encoded no longer has
            # the shape `finalize` masks: texts from memory are redacted before that.
            kept = {k: redact(v) if isinstance(v, str) else v for k, v in params.items()}
            return chat_url(scope, sub, **kept)

        self.env.globals.update(globals_, chat_url=redacted_url)
        self.env.filters["cut"] = cut
        self.env.filters["how_stated"] = how_item_stated

    def page(self, template: str, status: int = 200, **context: Any) -> web.Response:
        text = self.env.get_template(template).render(**context)
        return web.Response(text=text, status=status, content_type=HTML, charset="utf-8")

    def message(self, title: str, text: str, status: int, **context: Any) -> web.Response:
        return self.page("message.html", status, title=title, text=text, **context)


def scope_of(request: web.Request, renderer: Renderer, memory_root: Any) -> str:
    """The chat the address names; a page saying so (404) when it has no memory."""
    scope = request.match_info["scope"]
    try:
        validate_scope_key(scope)
    except ValueError:
        raise _not_found(renderer, scope) from None
    if not (memory_root / scope).is_dir():
        raise _not_found(renderer, scope)
    return scope


def _not_found(renderer: Renderer, scope: str) -> web.HTTPException:
    response = renderer.message(
        "No such chat", f"No chat {scope!r} has memory in this workspace.", 404
    )
    return web.HTTPNotFound(text=response.text, content_type=HTML)
