"""The memory page (`mnemobot web`, `run --web`) through a real HTTP client: nobody
without the token sees anything, corrections need their check token and confirmation and
erase as the memory tool does, thousands of items are paged on the server, every
language is shown as written, and no secret shows."""

from __future__ import annotations

import asyncio
import html
import logging
import re
import time
from datetime import UTC
from pathlib import Path
from urllib.parse import unquote_plus

import httpx
import orjson
import pytest
from filelock import FileLock

from mnemobot.bot.app import App
from mnemobot.bot.cli.workspace_guard import WorkspaceGuard
from mnemobot.bot.web.server import CORRECTIONS_KEY
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.notes.memory_versions import archive_version, list_versions
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from tests.conftest import ask
from tests.web_harness import (
    CHAT,
    SCOPE,
    TOKEN,
    StartPage,
    bot,
    files_with,
    start_page,
    visible_text,
)

__all__ = ["bot", "start_page"]  # fixtures used by name below

SECRET = "QX-7731-ZEBRA"
PAGES = ["/", f"/chat/{SCOPE}", f"/chat/{SCOPE}/facts", f"/chat/{SCOPE}/items"]
PAGES += [f"/chat/{SCOPE}/notes", f"/chat/{SCOPE}/memory", f"/chat/{SCOPE}/ask?q=locker"]


async def talked(app: App) -> None:
    """A chat that holds a code in every kind of file: items, daily note, MEMORY.md."""
    await ask(app, f"My locker code is {SECRET}.", chat=CHAT)
    await ask(app, "I like green tea in the morning.", chat=CHAT)
    memory_md = ScopePaths(app.paths.root, SCOPE).memory_file
    memory_md.write_text(f"- Locker code {SECRET}\n- Likes green tea\n")


def item_id_holding(app: App, text: str) -> str:
    config = app.runtime.current()
    found = app.memory.recall.search(
        SCOPE, text, config=config.memory, tz=config.assistant.tzinfo()
    )
    assert found, text
    return found[0][0].id


async def test_nobody_without_the_token_sees_anything(bot: App, start_page: StartPage) -> None:
    await talked(bot)
    page = await start_page()
    async with httpx.AsyncClient(base_url=page.base, timeout=30) as stranger:
        for path in [*PAGES, "/static/style.css", "/chat/console:kc/forget/x"]:
            for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
                refused = await stranger.get(path, headers=headers)
                assert refused.status_code == 401, path
                assert SCOPE not in refused.text and SECRET not in refused.text
        stranger.cookies.set("mnemobot_web_0", "guess-0123456789abcd")
        assert (await stranger.get("/")).status_code == 401
        stranger.cookies.clear()
        posted = await stranger.post(f"/chat/{SCOPE}/forget/x", data={"confirm": "yes"})
        assert posted.status_code == 401

        # The printed address: its token becomes a cookie, and leaves the address.
        entered = await stranger.get(f"/chat/{SCOPE}/items?q=tea&token={TOKEN.value}")
        assert entered.status_code == 303
        assert entered.headers["Location"] == f"/chat/{SCOPE}/items?q=tea"
        cookie = entered.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        followed = await stranger.get(entered.headers["Location"])
        assert followed.status_code == 200 and "green tea" in followed.text
        # Every answer: no script, no framing, not kept in a cache.
        assert "default-src 'none'" in followed.headers["Content-Security-Policy"]
        assert followed.headers["Cache-Control"] == "no-store"
        assert TOKEN.value not in followed.text


@pytest.mark.parametrize("standalone", [False, True], ids=["run --web", "mnemobot web"])
async def test_forgetting_a_fact_erases_it_from_every_file_as_the_memory_tool_does(
    bot: App, start_page: StartPage, workspace: Path, standalone: bool
) -> None:
    await talked(bot)
    page = await start_page(standalone=standalone)
    assert files_with(workspace, SECRET)  # items, the daily note, MEMORY.md, the session
    item_id = item_id_holding(bot, "locker code")
    path = f"/chat/{SCOPE}/forget/{item_id}"

    asked = await page.get(path)
    assert asked.status_code == 200
    assert "Forget this?" in asked.text and SECRET in visible_text(asked.text)
    done = await page.confirm(path)

    assert done.status_code == 200, done.text
    shown = visible_text(done.text)
    # The memory tool's receipt, then what the erasure did.
    assert re.search(r"forgotten \d+ items?\. Hidden now", shown)
    # Erased at once, so the receipt does not promise it for the next maintenance.
    assert "by the next memory maintenance" not in shown
    assert re.search(rf"{SCOPE}: erase forgotten: erased \d+ forgotten texts", shown)
    assert files_with(workspace, SECRET) == []
    assert files_with(workspace, "green tea")  # the rest of the chat stays
    # The page's memory (the bot's own, with --web) no longer recalls it, nor does one
    # loaded from the files afresh; the pages no longer show it.
    config = bot.runtime.current()
    for memory in (page.host.memory, WorkspaceMemory.open(workspace)):
        pack = memory.recall.build_pack(
            SCOPE, "locker code", now=time.time(), config=config.memory, tz=UTC
        )
        assert SECRET not in pack.rendered
    for listed in PAGES:
        assert SECRET not in (await page.get(listed)).text


async def test_a_forget_while_a_turn_holds_the_chat_is_hidden_at_once_and_erased_after(
    bot: App, start_page: StartPage, workspace: Path
) -> None:
    await talked(bot)
    page = await start_page()
    page.server.app[CORRECTIONS_KEY].erase_wait_seconds = 0.5
    path = f"/chat/{SCOPE}/forget/{item_id_holding(bot, 'locker code')}"
    # What a turn of the chat holds until it has recorded itself in memory.
    turn = FileLock(bot.sessions.lock_path_for(CHAT.key), thread_local=False)
    turn.acquire()
    try:
        done = visible_text((await page.confirm(path)).text)
        assert "still erasing from every file" in done
        overview = visible_text((await page.get(f"/chat/{SCOPE}")).text)
        assert "still to be erased from every file" in overview
        for listed in PAGES:
            assert SECRET not in (await page.get(listed)).text
    finally:
        turn.release()
    deadline = time.monotonic() + 60
    while files_with(workspace, SECRET) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert files_with(workspace, SECRET) == []


async def test_a_correction_needs_its_check_token_and_its_confirmation(
    bot: App, start_page: StartPage, workspace: Path
) -> None:
    await talked(bot)
    page = await start_page()
    path = f"/chat/{SCOPE}/forget/{item_id_holding(bot, 'locker code')}"
    csrf = await page.csrf(path)

    without = await page.client.post(path, data={"confirm": "yes"})
    forged = await page.client.post(path, data={"confirm": "yes", "csrf": "0" * 64})
    unconfirmed = await page.client.post(path, data={"csrf": csrf})

    assert (without.status_code, forged.status_code, unconfirmed.status_code) == (403, 403, 400)
    assert "Nothing was changed" in forged.text and "Nothing was changed" in unconfirmed.text
    assert "memory/console:kc/MEMORY.md" in files_with(workspace, SECRET)
    assert item_id_holding(bot, "locker code") in path


async def test_read_only_makes_no_corrections(bot: App, start_page: StartPage) -> None:
    await talked(bot)
    paths = ScopePaths(bot.paths.root, SCOPE)
    archive_version(paths, b"- an older MEMORY.md\n", time.time() - 60, keep=5)
    page = await start_page(read_only=True)
    forget = f"/chat/{SCOPE}/forget/{item_id_holding(bot, 'locker code')}"
    restore = f"/chat/{SCOPE}/restore/{list_versions(paths)[0].version}"

    for path in (forget, restore):
        assert (await page.get(path)).status_code == 403
        posted = await page.client.post(path, data={"confirm": "yes"})
        assert posted.status_code == 403
        assert "corrections are off: this page was started with --read-only" in posted.text
    for listed in PAGES:
        text = (await page.get(listed)).text
        assert "Forget…" not in text and "Restore…" not in text
    assert SECRET in paths.memory_file.read_text()


async def test_a_standalone_page_does_not_forget_while_a_bot_serves_the_workspace(
    bot: App, start_page: StartPage
) -> None:
    await talked(bot)
    paths = ScopePaths(bot.paths.root, SCOPE)
    archive_version(paths, b"- an older MEMORY.md\n", time.time() - 60, keep=5)
    page = await start_page(standalone=True)
    # What `mnemobot run` holds while it serves the workspace.
    guard = WorkspaceGuard(WorkspacePaths(bot.paths.root), bot.paths.run_lock)
    assert guard.acquire()
    try:
        path = f"/chat/{SCOPE}/forget/{item_id_holding(bot, 'locker code')}"
        refused = await page.client.post(path, data={"confirm": "yes", "csrf": "x"})
        assert refused.status_code == 403  # the check token first
        asked = await page.get(path)
        assert asked.status_code == 403
        assert "a running `mnemobot run` serves this workspace" in visible_text(asked.text)
        assert SECRET in paths.memory_file.read_text()
        # MEMORY.md has one lock every writer holds, and the bot reads it from disk.
        restored = await page.confirm(f"/chat/{SCOPE}/restore/{list_versions(paths)[0].version}")
        assert restored.status_code == 200
        assert paths.memory_file.read_text() == "- an older MEMORY.md\n"
    finally:
        guard.release()


async def test_an_earlier_memory_md_is_compared_and_put_back(
    bot: App, start_page: StartPage, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mnemobot.bot.web")
    await talked(bot)
    paths = ScopePaths(bot.paths.root, SCOPE)
    archive_version(paths, b"- Lives in Paris\n- Likes green tea\n", time.time() - 60, keep=5)
    paths.memory_file.write_text("- Lives in Berlin\n- Likes green tea\n")
    [older] = list_versions(paths)
    page = await start_page()

    compared = visible_text((await page.get(f"/chat/{SCOPE}/memory")).text)
    assert "What changed from" in compared
    assert "− - Lives in Paris" in compared and "+ - Lives in Berlin" in compared
    done = await page.confirm(f"/chat/{SCOPE}/restore/{older.version}")

    assert done.status_code == 200
    assert f"restored MEMORY.md of {SCOPE} from {older.version}" in visible_text(done.text)
    assert paths.memory_file.read_text() == "- Lives in Paris\n- Likes green tea\n"
    # What it replaced is kept as a version in turn; the log says who did it.
    assert any("Berlin" in v.path.read_text() for v in list_versions(paths))
    said = f"web correction by anna: restored MEMORY.md of {SCOPE} from version {older.version}"
    assert said in caplog.text


def write_items(workspace: Path, scope: str, count: int, start: float) -> None:
    """`count` episodes, a minute apart, as the item store keeps them (one file a day)."""
    paths = ScopePaths(workspace, scope)
    lines: dict[Path, list[bytes]] = {}
    for n in range(count):
        at = start + 60 * n
        item = MemoryItem(
            id=f"item{n:05d}",
            layer=Layer.EPISODIC,
            type=ItemType.TURN,
            title=f"note {n}",
            content=f"User: note number {n} about word{n}\nAssistant: ok",
            scope=scope,
            created_at=at,
            updated_at=at,
            tags=["turn"],
        )
        day = time.gmtime(at)
        path = paths.episodic_dir / f"{time.strftime('%Y-%m-%d', day)}.jsonl"
        lines.setdefault(path, []).append(orjson.dumps(item.to_json_dict()))
    for path, records in lines.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\n".join(records) + b"\n")


@pytest.mark.parametrize("standalone", [False, True], ids=["run --web", "mnemobot web"])
async def test_three_thousand_items_are_paged_and_searched_on_the_server(
    workspace: Path, start_page: StartPage, standalone: bool
) -> None:
    write_items(workspace, "console:big", 3_000, start=1_750_000_000.0)
    page = await start_page(standalone=standalone)

    first = await page.get("/chat/console:big/items")
    last = await page.get("/chat/console:big/items", page=60)
    found = await page.get("/chat/console:big/items", q="word1234")
    beyond = await page.get("/chat/console:big/items", page=999)

    assert first.status_code == 200
    assert first.text.count('class="item ') == 50
    assert "1–50 of 3,000 · page 1 of 60" in visible_text(first.text)
    assert "item02999" in first.text and "item02949" not in first.text  # newest first
    assert last.text.count('class="item ') == 50 and "item00000" in last.text
    assert len(first.content) < 150_000  # a page, not the chat
    assert re.findall(r'id="item-(item\d+)"', found.text)[0] == "item01234"
    assert "page 60 of 60" in visible_text(beyond.text)
    overview = await page.get("/chat/console:big", days=365)
    assert "3,000 items" in visible_text(overview.text)
    chats = visible_text((await page.get("/")).text)
    assert "console:big" in chats and "3,000" in chats


async def test_right_to_left_text_is_shown_as_written(
    bot: App, start_page: StartPage, workspace: Path
) -> None:
    hebrew = "אני גר בתל אביב ליד הים"
    arabic = "أسكن في القاهرة قرب النيل"
    await ask(bot, hebrew, chat=CHAT)
    await ask(bot, arabic, chat=CHAT)
    page = await start_page()

    items = (await page.get(f"/chat/{SCOPE}/items")).text
    notes = (await page.get(f"/chat/{SCOPE}/notes")).text
    for shown in (items, notes):
        for text in (hebrew, arabic):
            # In an element that takes its direction from its own text.
            assert re.search(rf'<(div|p) class="[^"]*" dir="auto">[^<]*{text}', shown), text
    searched = await page.get(f"/chat/{SCOPE}/items", q="القاهرة")
    assert arabic in searched.text and hebrew not in searched.text


async def test_no_secret_of_the_bot_or_in_memory_is_shown(bot: App, start_page: StartPage) -> None:
    api_key = "sk-live-abcdefghijklmnopqrstuvwx"
    bot_token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    url = "https://deploy:hunter2-very-secret@git.example.com/repo.git"
    await ask(bot, f"keep this: {api_key} and {bot_token} and {url}", chat=CHAT)
    # The bot's own model key, as a person might paste it into a chat.
    await ask(bot, "my key for the model server is test-key-of-the-bot", chat=CHAT)
    page = await start_page()

    for path in [*PAGES, f"/chat/{SCOPE}/ask?q=keep+this&fresh=1"]:
        text = (await page.get(path)).text
        for secret in (api_key, bot_token, "hunter2-very-secret", "test-key", TOKEN.value):
            assert secret not in text, (path, secret)
    items = visible_text((await page.get(f"/chat/{SCOPE}/items")).text)
    assert "https://deploy:[REDACTED]@git.example.com/repo.git" in items
    assert "keep this: [REDACTED] and [REDACTED]" in items


async def test_no_secret_in_memory_is_in_a_link_of_the_page(
    bot: App, start_page: StartPage
) -> None:
    # The Ask page links each packed item to a search for its first words: those words
    # were put in the link's address, percent-encoded, where no redaction saw them.
    bot_token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    url = "https://ci:hunter2-very-secret@ci.example.com"
    await ask(bot, f"tok {bot_token}", chat=CHAT)
    await ask(bot, f"ci {url}", chat=CHAT)
    page = await start_page()

    for question in ("tok", "ci"):
        text = (await page.get(f"/chat/{SCOPE}/ask", q=question, fresh="1")).text
        links = [unquote_plus(html.unescape(href)) for href in re.findall(r'href="([^"]*)"', text)]
        assert any("/items?q=" in link for link in links), question  # the item is linked
        for link in links:
            assert bot_token not in link and "hunter2-very-secret" not in link, link
