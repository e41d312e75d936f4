"""What the memory page shows of a chat: facts with their history, what was written per
day, scheduled tasks, and Ask: exactly the memory the bot adds to the model's request."""

from __future__ import annotations

import html
import re
import time
from datetime import datetime
from pathlib import Path

import orjson

from mnemobot.bot.app import App
from mnemobot.bot.schedule.service import schedule_folder
from mnemobot.bot.schedule.store import FileTaskStore
from mnemobot.bot.schedule.tasks import Schedule, Task, TaskChat
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.model.windows import ModelWindow, ModelWindowStore
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, message_text
from tests.conftest import ask
from tests.web_harness import CHAT, SCOPE, StartPage, bot, start_page, visible_text

__all__ = ["bot", "start_page"]  # fixtures used by name below


async def test_a_fact_shows_the_values_it_replaced_when_and_where_each_came_from(
    bot: App, start_page: StartPage
) -> None:
    await ask(bot, "I live in Paris", chat=CHAT)
    await ask(bot, "I moved to Berlin", chat=CHAT)
    page = await start_page()

    facts = (await page.get(f"/chat/{SCOPE}/facts")).text
    earlier = (await page.get(f"/chat/{SCOPE}/facts", kind="earlier")).text

    # Berlin holds now; Paris is its earlier value, dated, with the message it came from.
    [berlin] = re.findall(r'<li class="fact">.*?</li>\s*</ol>\s*</details>', facts, re.S)
    current, history = berlin.split('<details class="earlier"')
    assert "I moved to Berlin" in current and "Paris" not in current
    assert "1 earlier value" in history
    assert re.search(r"until \d{4}-\d\d-\d\d \d\d:\d\d", visible_text(history))
    assert "from the message of" in history and '<q dir="auto">I live in Paris' in history
    assert "I live in Paris" in earlier and "Berlin" not in visible_text(earlier).split("Filter")[1]


async def test_the_overview_charts_what_was_written_per_day_and_lists_scheduled_tasks(
    bot: App, start_page: StartPage, workspace: Path
) -> None:
    await ask(bot, "I like green tea in the morning", chat=CHAT)
    store = FileTaskStore(schedule_folder(workspace))
    due = time.time() + 3600
    task = Task(
        id="t1",
        number=0,
        chat=TaskChat.of(CHAT),
        kind="reminder",
        text="water the plants",
        schedule=Schedule("once", at=due),
        zone="UTC",
        created_at=time.time(),
        next_due=due,
    )
    await store.add(task, max_per_chat=10)
    page = await start_page(standalone=True)

    overview = (await page.get(f"/chat/{SCOPE}")).text

    today = datetime.now(bot.runtime.current().assistant.tzinfo()).date().isoformat()
    bars = re.findall(r'<rect class="(\w+)"[^>]*><title>([^<]*)</title>', overview)
    assert bars, overview
    assert all(title.startswith(today) for _, title in bars)
    episodes = int(re.search(r"(\d+) episodic", bars[0][1]).group(1))  # type: ignore[union-attr]
    assert episodes >= 1 and f"{today}: " in bars[0][1]
    shown = visible_text(overview)
    assert "#1" in shown and "reminder: water the plants" in shown


def tram_episodes(workspace: Path, count: int) -> None:
    """Episodes about trams, written as the store keeps them, an hour apart."""
    paths = ScopePaths(workspace, SCOPE)
    start = time.time() - count * 3600
    records = []
    for n in range(count):
        at = start + n * 3600
        text = f"User: the tram {n} to the castle leaves from stop {n} near the old bridge\n"
        text += f"Assistant: noted, tram {n} from stop {n}"
        item = MemoryItem(
            id=f"tram{n:03d}",
            layer=Layer.EPISODIC,
            type=ItemType.TURN,
            title=text[:80],
            content=text,
            scope=SCOPE,
            created_at=at,
            updated_at=at,
            tags=["turn"],
            references=[f"console:kc:m{n}"],
        )
        records.append(orjson.dumps(item.to_json_dict()))
    path = paths.episodic_dir / "2020-01-01.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(records) + b"\n")


async def test_ask_shows_exactly_the_memory_the_bot_adds_within_the_learned_window(
    bot: App, start_page: StartPage, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    tram_episodes(workspace, 60)
    # The model's real window, as the bot learned it: memory's budgets shrink to fit it.
    model = bot.assistant.model_name()
    window = ModelWindow(4096, "server", "/props n_ctx")
    ModelWindowStore.in_workspace(workspace).put(bot.llm.base_url, model, window)  # type: ignore[attr-defined]
    page = await start_page()
    question = "Which tram goes to the castle?"

    shown = (await page.get(f"/chat/{SCOPE}/ask", q=question)).text
    await ask(bot, question, chat=CHAT)
    request = openai_server.requests[-1]
    sent = "\n".join(message_text(message) for message in request["messages"])

    pack = re.search(r'<pre class="pack-text" dir="auto">(.*?)</pre>', shown, re.S)
    assert pack is not None
    lines = [line for line in html.unescape(pack.group(1)).splitlines() if line.startswith("- ")]
    # The very items the bot sent, no more, no fewer.
    assert lines and all(line in sent for line in lines)
    assert len(lines) == len(re.findall(r"^- \d{4}-\d\d-\d\d: User: the tram", sent, re.M))
    text = visible_text(shown)
    allowance = bot.runtime.current().for_context_window(4096).memory_allowance_tokens()
    assert "context window 4,096 tokens (reported by the server" in text
    assert f"memory may take {allowance:,} tokens" in text
    rows = re.findall(r"<tr>\s*<td>(Recent episodes|Relevant facts)</td>.*?</tr>", shown, re.S)
    assert 1 < len(rows) < 60  # the window's budget, not every match
    total = int(re.search(r"<b>([\d,]+)</b> tokens of memory items", shown).group(1))  # type: ignore[union-attr]
    budgets = re.search(r"against a budget of ([\d,]+) \(up to ([\d,]+) for high", text)
    assert budgets is not None
    soft, most = (int(found.replace(",", "")) for found in budgets.groups())
    assert total <= most and soft < bot.runtime.current().memory.soft_prompt_budget_tokens
    # Why each was chosen: the question's words, or a turn next to a matching one.
    reasons = re.findall(r'<span class="reason (\w+)">', shown)
    assert reasons and set(reasons) <= {"words", "meaning", "date", "neighbour", "recent", "update"}
    assert "words" in reasons
