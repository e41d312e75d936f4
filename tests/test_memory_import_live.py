"""An imported private chat beside what the live bot remembers of the same chat.

Telegram numbers a private chat's messages for each account: the person's export and the
bot see different numbers for the same message, and the same number for different ones.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from filelock import FileLock

from mnemobot.bot.cli.main import main
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.upkeep.ref_numbering import MARK_FILE_NAME
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, reply, tool_call
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import run_mnemobot
from tests.schedule_harness import SteppedClock
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 5151
SCOPE = f"telegram:{USER}"


def _export(path: Path, chat_type: str, texts: list[str]) -> Path:
    """The person's own export: their account numbers the messages from 1."""
    messages = []
    for number, text in enumerate(texts, start=1):
        at = datetime(2025, 3, number, 18, 30, tzinfo=UTC)
        messages.append(
            {
                "id": number,
                "type": "message",
                "date": at.strftime("%Y-%m-%dT%H:%M:%S"),
                "date_unixtime": str(int(at.timestamp())),
                "from": "Ada",
                "from_id": f"user{USER}",
                "text": text,
            }
        )
    path.write_text(
        json.dumps({"name": "Ada", "type": chat_type, "id": USER, "messages": messages})
    )
    return path


def _import(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    workspace: Path,
    export: Path,
) -> str:
    monkeypatch.setenv("BOT_WORKSPACE", str(workspace))
    monkeypatch.setenv("BOT_TIMEZONE", "UTC")
    code = main(["memory", "import", str(export), "--chat", SCOPE])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def _current(workspace: Path) -> list[str]:
    items: dict[str, dict[str, object]] = {}
    for path in sorted((workspace / "memory" / SCOPE).rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip() and "id" in (item := json.loads(line)):
                items[str(item["id"])] = item
    return [
        str(i["content"]) for i in items.values() if "validTo" not in i and "supersededBy" not in i
    ]


async def test_an_import_after_live_use_keeps_every_message_and_an_edit_revises_only_its_own(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bot = await start_bot()
    live = telegram.send_text("My locker code is 1234.", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    assert live["message"]["message_id"] == 1
    await bot.shutdown()

    # Months of the chat before the bot, exported by the person: their message 1 is
    # another message than the bot's message 1.
    export = _export(
        workspace.parent / "result.json",
        "personal_chat",
        ["My sister Lena lives in Graz.", "I sing in a choir on Tuesdays."],
    )
    first = _import(monkeypatch, capsys, workspace, export)
    assert "imported 2 messages" in first and "0 already there" in first
    again = _import(monkeypatch, capsys, workspace, export)
    assert "imported 0 messages" in again and "2 already there" in again

    await start_bot()
    telegram.edit_message(live, "My locker code is 5678.")
    # The edit is done in the chat's lane before the next message's turn.
    telegram.send_text("thanks", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 2)
    current = _current(workspace)
    assert any("5678" in c for c in current)
    # The edit revised the bot's message 1, not what was imported as the person's.
    assert any("Lena lives in Graz" in c for c in current)
    assert not any("1234" in c for c in current)


def test_an_import_while_the_bot_serves_the_workspace_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A running bot keeps the chat's memory loaded: it answered from memory without an
    import made meanwhile until it restarted."""
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", "personal_chat", ["My sister Lena lives in Graz."])
    monkeypatch.setenv("BOT_WORKSPACE", str(workspace))
    monkeypatch.setenv("BOT_TIMEZONE", "UTC")
    paths = WorkspacePaths(workspace)
    paths.root.mkdir(parents=True)
    # Held as `mnemobot run` holds it.
    with FileLock(paths.run_lock):
        assert main(["memory", "import", str(export), "--chat", SCOPE]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "mnemobot: a running `mnemobot run` serves this workspace and would not see the "
        "import: stop the bot, import, then start it again"
    ]
    assert not (workspace / "memory" / SCOPE).exists()
    assert "imported 1 message" in _import(monkeypatch, capsys, workspace, export)


def test_a_supergroups_export_shares_the_live_bots_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """There Telegram numbers a message once for everyone: the import and the live bot
    name it alike, and an import of a message the bot saw adds it once."""
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", "private_supergroup", ["Deploys are on Fridays."])
    _import(monkeypatch, capsys, workspace, export)
    pack = main(["memory", "pack", "when are deploys?", "--chat", SCOPE, "--json"])
    assert pack == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert next(i["references"] for i in items if "Fridays" in i["content"]) == ["tg:1"]


def test_an_import_from_before_refs_of_their_own_is_not_imported_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An upgrade: the same private chat export imported again finds its messages there,
    listed by the earlier import under the live form of their ref."""
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", "personal_chat", ["A", "B", "C"])
    folder = workspace / "memory" / SCOPE
    folder.mkdir(parents=True)
    (folder / "imported-messages.txt").write_text("tg:1\ntg:2\n")
    out = _import(monkeypatch, capsys, workspace, export)
    assert "imported 1 message" in out and "2 already there" in out


async def test_an_edit_under_a_new_bot_leaves_what_the_chat_said_to_the_earlier_bot(
    start_bot: StartBot,
    telegram: TelegramServer,
    workspace: Path,
) -> None:
    """The workspace moved to another bot: that bot numbers the chat's messages from 1
    again, so its message 1 is another message than the earlier bot's message 1, which
    memory still names."""
    with TelegramServer(token="654321:EARLIER-BOT") as earlier_server:
        earlier = await start_bot(
            server=earlier_server,
            clock=SteppedClock(datetime(2025, 3, 1, 9, tzinfo=UTC).timestamp()),
        )
        said = earlier_server.send_text("My sister Lena lives in Graz.", chat_id=USER)
        assert said["message"]["message_id"] == 1
        await earlier_server.wait_for_messages_async(USER, 1)
        await earlier.shutdown()

    await start_bot()
    live = telegram.send_text("My locker code is 1234.", chat_id=USER)
    assert live["message"]["message_id"] == 1
    [answer] = await telegram.wait_for_messages_async(USER, 1)
    # Its own answer, not the one the earlier bot gave its message 1.
    assert answer["plain_text"] == "echo: My locker code is 1234."
    telegram.edit_message(live, "My locker code is 5678.")
    telegram.send_text("thanks", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 2)
    current = _current(workspace)
    assert any("5678" in c for c in current)
    assert not any("1234" in c for c in current)
    assert any("Lena lives in Graz" in c for c in current)


def test_no_bot_starts_and_no_second_import_runs_while_an_import_writes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    openai_server: FakeOpenAIServer,
) -> None:
    """A bot started during a long import would load chats' memory half-written and both
    would write the same files; so would two imports."""
    workspace = tmp_path / "ws"
    export = _export(tmp_path / "result.json", "personal_chat", ["My sister Lena lives in Graz."])
    paths = WorkspacePaths(workspace)
    paths.root.mkdir(parents=True)
    # Held as an import in another process holds it while it writes.
    with TelegramServer() as telegram_api, FileLock(paths.memory_command_lock):
        started = run_mnemobot(
            "run",
            timeout=60,
            BOT_WORKSPACE=str(workspace),
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=openai_server.base_url,
            TELEGRAM_BOT_TOKEN=telegram_api.token,
            TELEGRAM_API_BASE_URL=telegram_api.base_url,
            TELEGRAM_ALLOWED_USERS=str(USER),
        )
        assert started.returncode == 2
        assert started.stderr.strip().splitlines()[-1] == (
            "mnemobot: a `mnemobot memory import` or `memory erase` is writing this "
            "workspace; run this again when it has finished"
        )
        assert "Traceback" not in started.stderr
        assert telegram_api.calls("getUpdates") == []
        monkeypatch.setenv("BOT_WORKSPACE", str(workspace))
        monkeypatch.setenv("BOT_TIMEZONE", "UTC")
        assert main(["memory", "import", str(export), "--chat", SCOPE]) == 2
        assert "is writing this workspace" in capsys.readouterr().err
        assert main(["memory", "erase", "--chat", SCOPE]) == 2
        assert "is writing this workspace" in capsys.readouterr().err
        assert not (workspace / "memory" / SCOPE).exists()
    # Once it has finished, both start.
    assert "imported 1 message" in _import(monkeypatch, capsys, workspace, export)


async def test_a_new_bots_first_message_is_answered_with_what_was_told_the_earlier_bot(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    """The earlier bot's message 1 was said before the new bot's first message, also
    number 1: that memory is no episode of the new message, so the model is given it."""
    with TelegramServer(token="654321:EARLIER-BOT") as earlier_server:
        earlier = await start_bot(
            server=earlier_server,
            clock=SteppedClock(datetime(2025, 3, 1, 9, tzinfo=UTC).timestamp()),
        )
        earlier_server.send_text("My sister Lena lives in Graz.", chat_id=USER)
        await earlier_server.wait_for_messages_async(USER, 1)
        earlier_server.send_text("/new", chat_id=USER)
        await earlier_server.wait_for_messages_async(USER, 2)
        await earlier.shutdown()

    await start_bot()
    asked = telegram.send_text("Where does my sister live?", chat_id=USER)
    assert asked["message"]["message_id"] == 1
    await telegram.wait_for_messages_async(USER, 1)
    # The exchange itself, not only the fact taken from it.
    assert "Assistant: echo: My sister Lena lives in Graz." in _request_text(openai_server)


def _request_text(openai_server: FakeOpenAIServer) -> str:
    return "\n".join(str(m.get("content")) for m in openai_server.last_request()["messages"])


async def test_what_the_earlier_bot_was_told_is_not_repeated_from_memory_beside_it(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    """The conversation still holds the earlier bot's messages (named for that bot now):
    memory's episodes of them are carried, not shown again."""
    with TelegramServer(token="654321:EARLIER-BOT") as earlier_server:
        earlier = await start_bot(
            server=earlier_server,
            clock=SteppedClock(datetime(2025, 3, 1, 9, tzinfo=UTC).timestamp()),
        )
        earlier_server.send_text("hi", chat_id=USER)
        await earlier_server.wait_for_messages_async(USER, 1)
        said = earlier_server.send_text("We keep the spare key under the blue pot.", chat_id=USER)
        assert said["message"]["message_id"] == 3
        await earlier_server.wait_for_messages_async(USER, 2)
        await earlier.shutdown()

    await start_bot()
    telegram.send_text("Where is the spare key?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    request = openai_server.last_request()["messages"]
    conversation = [str(m["content"]) for m in request[1:-1]]
    assert "We keep the spare key under the blue pot." in conversation
    # The message, and memory beside it when memory has more to say.
    assert "blue pot" not in str(request[-1]["content"])


@pytest.mark.parametrize("memory_from", ["this release", "an earlier release"])
async def test_reading_a_message_ref_after_a_move_reads_only_the_current_bots_message(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
    memory_from: str,
) -> None:
    with TelegramServer(token="654321:EARLIER-BOT") as earlier_server:
        earlier = await start_bot(
            server=earlier_server,
            clock=SteppedClock(datetime(2025, 3, 1, 9, tzinfo=UTC).timestamp()),
        )
        said = earlier_server.send_text("My sister Lena lives in Graz.", chat_id=USER)
        assert said["message"]["message_id"] == 1
        await earlier_server.wait_for_messages_async(USER, 1, timeout=30)
        await earlier.shutdown()
    if memory_from == "an earlier release":
        # Upgraded and moved at once: memory never recorded which bot numbered it.
        (workspace / "memory" / SCOPE / MARK_FILE_NAME).unlink()

    await start_bot()
    live = telegram.send_text("My locker code is 1234.", chat_id=USER)
    assert live["message"]["message_id"] == 1
    await telegram.wait_for_messages_async(USER, 1, timeout=30)
    openai_server.script(
        tool_call("memory", {"operation": "read", "id": "tg:1"}), reply("Read it.")
    )
    telegram.send_text("What did my first message say?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 2, timeout=30)
    read = [
        str(m["content"])
        for m in openai_server.last_request()["messages"]
        if m.get("role") == "tool"
    ][-1]
    assert "1234" in read
    assert "Lena" not in read


# A message longer than a pack line shows (`memory.pack.render.PASSAGE_CHARS`).
_LONG_TRIP_NOTE = " ".join(
    [
        "We drove to the lake house on Friday and unpacked the groceries first.",
        "The kids swam until dinner while the grill heated up on the deck.",
        "On Saturday it rained, so we played board games and baked a plum cake.",
        "Grandma called twice to ask about the weather and the new neighbours.",
        "On Sunday we cleaned the fridge, swept the porch and closed the shutters.",
        "The spare key of the lake house hangs behind the garage door now.",
        "We left at noon and stopped for ice cream at the old mill on the way home.",
    ]
)


async def test_after_a_move_an_excerpt_names_the_earlier_bots_message_and_read_finds_it(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
) -> None:
    """A pack line of a long message shows a passage and names the message the rest is
    in: after a move, by the name that reads the earlier bot's message, not `tg:1`, which
    is the new bot's."""
    with TelegramServer(token="654321:EARLIER-BOT") as earlier_server:
        earlier = await start_bot(
            server=earlier_server,
            clock=SteppedClock(datetime(2025, 3, 1, 9, tzinfo=UTC).timestamp()),
        )
        earlier_server.send_text(_LONG_TRIP_NOTE, chat_id=USER)
        await earlier_server.wait_for_messages_async(USER, 1)
        earlier_server.send_text("/new", chat_id=USER)
        await earlier_server.wait_for_messages_async(USER, 2)
        await earlier.shutdown()

    await start_bot()
    telegram.send_text("Hello again.", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 1)
    openai_server.script(
        tool_call("memory", {"operation": "read", "id": "tg-bot654321:1"}), reply("Found it.")
    )
    telegram.send_text("Where does the spare key of the lake house hang?", chat_id=USER)
    await telegram.wait_for_messages_async(USER, 2)
    request = openai_server.last_request()["messages"]
    asked = next(
        str(m["content"])
        for m in reversed(request)
        if m.get("role") == "user" and "spare key" in str(m["content"])
    )
    line = next(x for x in asked.splitlines() if "behind the garage door" in x)
    assert "excerpt of tg-bot654321:1" in line, line
    read = [str(m["content"]) for m in request if m.get("role") == "tool"][-1]
    assert "plum cake" in read and "behind the garage door" in read
