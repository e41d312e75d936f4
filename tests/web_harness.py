"""The memory page over a real workspace: a bot that talked through the fake model server,
and the page on its services (`run --web`) or alone on the same files (`mnemobot web`),
listening on 127.0.0.1, read through a real HTTP client."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.cli.web import host_of_app, page_redaction, standalone_host
from mnemobot.bot.web.access import Access, WebToken
from mnemobot.bot.web.host import WebHost
from mnemobot.bot.web.server import WebServer, build_web_app, cookie_name
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.conftest import make_settings

TOKEN = WebToken("anna", "anna-token-0123456789abcdef")
CHAT = ChatRef("console", "kc", user_id="u1")
SCOPE = "console:kc"
_CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


def files_with(root: Path, text: str) -> list[str]:
    """Every file under `root` holding `text` (as UTF-8 bytes)."""
    needle = text.encode()
    found = [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
    return sorted(str(p.relative_to(root)) for p in found)


def visible_text(page: str) -> str:
    """The page's text as a person reads it (tags out, entities decoded)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@dataclass
class Page:
    base: str
    host: WebHost
    server: WebServer
    client: httpx.AsyncClient = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx.AsyncClient(
            base_url=self.base, headers={"Authorization": f"Bearer {TOKEN.value}"}, timeout=30
        )

    async def get(self, path: str, **params: object) -> httpx.Response:
        return await self.client.get(path, params={k: str(v) for k, v in params.items()})

    async def csrf(self, path: str) -> str:
        """The check token of the form on the confirmation page at `path`."""
        page = await self.get(path)
        assert page.status_code == 200, page.text
        found = _CSRF.search(page.text)
        assert found, page.text
        return found.group(1)

    async def confirm(self, path: str) -> httpx.Response:
        """What the confirmation button of the page at `path` does."""
        return await self.client.post(path, data={"csrf": await self.csrf(path), "confirm": "yes"})


StartPage = Callable[..., Awaitable[Page]]


@pytest.fixture
async def bot(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[App]:
    app = build_app(make_settings(workspace, openai_server))
    yield app
    await app.close()


@pytest.fixture
async def start_page(
    bot: App, workspace: Path, openai_server: FakeOpenAIServer
) -> AsyncIterator[StartPage]:
    started: list[Page] = []

    async def start(*, standalone: bool = False, read_only: bool = False) -> Page:
        settings = make_settings(workspace, openai_server)
        shown = page_redaction(settings, [TOKEN])
        host = standalone_host(settings, shown, None) if standalone else host_of_app(bot, shown)
        access = Access([TOKEN], cookie_name=cookie_name(0))
        server = WebServer(build_web_app(host, access, read_only=read_only), "127.0.0.1", 0)
        await server.start()
        page = Page(server.address().rstrip("/"), host, server)
        started.append(page)
        return page

    yield start
    for page in started:
        await page.client.aclose()
        await page.server.stop()
        if page.host.memory is not bot.memory:
            page.host.memory.close()
