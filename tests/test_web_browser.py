"""The memory page in a real headless browser (Debian's chromium, driven by Playwright):
the printed address opens it, every page renders, right-to-left text runs right to left,
and one click (and its confirmation) forgets a fact everywhere.

A screenshot of each page is kept for a person to look at: under tests/artifacts/web/
(not in git), or the folder MNEMOBOT_WEB_SCREENSHOTS names (docs/web/ was made so).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from mnemobot.bot.app import App
from mnemobot.memory.notes.memory_versions import archive_version
from mnemobot.memory.store.items import ItemType
from mnemobot.memory.store.scope_paths import ScopePaths
from tests.conftest import ask
from tests.web_harness import CHAT, SCOPE, TOKEN, StartPage, bot, files_with, start_page

__all__ = ["bot", "start_page"]  # fixtures used by name below

CHROMIUM = Path("/usr/bin/chromium")
# What a headless chromium needs here: no sandbox (containers), nothing fetched from Google.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parent / "artifacts" / "web"
SECRET = "QX-7731-ZEBRA"
HEBREW = "אני גר בתל אביב ליד הים"
# A fact saved in the user's words (the memory tool's add): it starts right to left.
ARABIC_FACT = "أفضّل الشاي الأخضر في الصباح"

async_api = pytest.importorskip(
    "playwright.async_api", reason="no Playwright: pip install -e '.[test]' brings it"
)
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and shutil.which("chromium") is None,
    reason="no browser: `apt-get install -y chromium` (Debian) to run the page in one",
)


def shots_folder() -> Path:
    folder = Path(os.environ.get("MNEMOBOT_WEB_SCREENSHOTS") or ARTIFACTS)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def a_chat_worth_seeing(bot: App) -> None:
    for text in (
        "I live in Paris",
        "I prefer green tea over coffee in the morning",
        f"My locker code is {SECRET}.",
        "I moved to Berlin",
        HEBREW,
        "We fly to Lisbon on Friday for the conference",
    ):
        await ask(bot, text, chat=CHAT)
    config = bot.runtime.current().memory
    bot.memory.record.add_fact(
        SCOPE, ARABIC_FACT, item_type=ItemType.PREFERENCE, at=time.time(), config=config
    )
    paths = ScopePaths(bot.paths.root, SCOPE)
    archive_version(paths, b"- Lives in Paris\n- Likes green tea\n", time.time() - 86_400, keep=5)
    paths.memory_file.write_text(
        f"- Lives in Berlin (moved from Paris)\n- Likes green tea\n- Locker code {SECRET}\n"
    )


@pytest.mark.slow
async def test_the_page_in_a_real_browser(bot: App, start_page: StartPage, workspace: Path) -> None:
    await a_chat_worth_seeing(bot)
    page_server = await start_page()
    shots = shots_folder()
    errors: list[str] = []
    async with async_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM if CHROMIUM.exists() else shutil.which("chromium")),
            args=CHROMIUM_ARGS,
        )
        try:
            context = await browser.new_context(viewport={"width": 1100, "height": 900})
            page = await context.new_page()
            page.on("console", lambda message: errors.append(message.text))
            page.on(
                "response",
                lambda response: response.status >= 400 and errors.append(response.url),
            )
            page.on("pageerror", lambda error: errors.append(str(error)))

            async def shot(name: str) -> None:
                await page.screenshot(path=str(shots / f"{name}.png"), full_page=True)

            # The address printed at start: the token becomes a cookie and leaves the bar.
            await page.goto(f"{page_server.base}/?token={TOKEN.value}")
            assert TOKEN.value not in page.url
            [cookie] = await context.cookies()
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
            assert await page.locator("table.chats").get_by_text(SCOPE).count() == 1
            await shot("01-chats")

            await page.get_by_role("link", name=SCOPE).first.click()
            await page.locator("svg.timeline rect").first.wait_for()
            await shot("02-chat")

            await page.get_by_role("link", name="Facts", exact=True).click()
            await page.get_by_text("1 earlier value").wait_for()
            await shot("03-facts")

            await page.get_by_role("link", name="Items", exact=True).click()
            # Each text runs in its own direction: the Arabic fact right to left, a turn
            # ("User: ...") left to right with its Hebrew words right to left inside it.
            arabic = page.locator(".content", has_text=ARABIC_FACT).first
            assert await arabic.evaluate("e => getComputedStyle(e).direction") == "rtl"
            turn = page.locator(".content", has_text=HEBREW).first
            assert await turn.evaluate("e => getComputedStyle(e).direction") == "ltr"
            assert HEBREW in await turn.inner_text()
            await shot("04-items")

            await page.get_by_role("link", name="Daily notes").click()
            await page.locator(".note-line").first.wait_for()
            await shot("05-notes")

            await page.get_by_role("link", name="MEMORY.md", exact=True).click()
            await page.get_by_text("What changed from").wait_for()
            await shot("06-memory-md")

            await page.get_by_role("link", name="Ask", exact=True).click()
            await page.get_by_label("Question").fill("where do I live now?")
            await page.get_by_text("as after /new").click()
            await page.get_by_role("button", name="Ask").click()
            await page.locator("table.pack").wait_for()
            assert await page.locator("span.reason").count() >= 1
            await shot("07-ask")

            # Forget the code: one click, then its confirmation.
            await page.get_by_role("link", name="Items", exact=True).click()
            await page.get_by_label("Search items").fill("locker code")
            await page.get_by_role("button", name="Show").click()
            await (
                page.locator("article.item", has_text=SECRET)
                .first.get_by_role("link", name="Forget…")
                .click()
            )
            await page.get_by_role("heading", name="Forget this?").wait_for()
            await shot("08-forget")
            await page.get_by_role("button", name="Forget it everywhere").click()
            await page.get_by_role("heading", name="Forgotten").wait_for()
            assert "Hidden now" in await page.locator("pre.receipt").inner_text()
            await shot("09-forgotten")

            await page.goto(f"{page_server.base}/chat/{SCOPE}/items?q=locker")
            assert SECRET not in await page.content()
        finally:
            await browser.close()
    assert [p for p in files_with(workspace, SECRET) if not p.startswith("delivery/")] == []
    # No script runs and nothing broke the page's rules (a violation is logged here).
    assert errors == []
    print(f"\nscreenshots of each page: {shots}")
