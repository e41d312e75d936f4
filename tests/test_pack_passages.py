"""A long remembered message shows in a pack as the passage the question is about.

A pack line showed an item whole, so a few long replies filled the budget with what the
question did not touch. Now a long item is shown (and priced) as its best-matching passage,
its cuts marked and the message named, and the `memory` tool reads the whole message by
that name."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemobot.base.tokens import estimate_item_tokens
from mnemobot.bot.app import App, build_app
from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.build import build_pack
from mnemobot.memory.pack.passages import passage, units, weight_in
from mnemobot.memory.pack.query import MemoryQuery
from mnemobot.memory.pack.render import Focus, render_line
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import indexed_text
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem
from mnemobot.memory.text.terms import terms
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    context_text,
    reply,
    tool_call,
    tool_messages,
)
from tests.conftest import CONSOLE_CHAT, ask, make_settings

WORDS = ["deploy", "server", "budget", "tea", "berlin", "cache", "index", "crash", "plan"]
START = 1_700_000_000.0

sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(
    lambda words: " ".join(words).capitalize() + "."
)
prose_line = st.lists(sentence, min_size=1, max_size=6).map(" ".join)
code_line = st.lists(st.sampled_from([*WORDS, "=", "(", ")", "x"]), max_size=40).map(" ".join)
code_block = st.lists(code_line, min_size=1, max_size=8).map(
    lambda lines: "```py\n" + "\n".join(lines) + "\n```"
)
texts = st.lists(st.one_of(prose_line, prose_line, code_block), min_size=1, max_size=12).map(
    "\n".join
)
weights = st.dictionaries(
    st.sampled_from([terms(word)[0] for word in WORDS]), st.floats(0.1, 5.0), max_size=4
)


def code_lines(text: str) -> list[tuple[int, int]]:
    """[start, end) of every line inside a fenced block (fences included)."""
    return [(unit.start, unit.end) for unit in units(text, 10**9) if unit.code]


@settings(max_examples=200, deadline=None)
@given(texts, weights, st.integers(40, 600))
def test_a_passage_is_one_stretch_within_the_limit_and_never_cuts_a_line_of_code(
    text: str, query: dict[str, float], limit: int
) -> None:
    text = text.rstrip()
    chosen = passage(text, query, limit)
    assert chosen.text == text[chosen.start : chosen.end]
    assert len(chosen.text) <= limit
    if len(text) <= limit:
        assert chosen.text == text and not chosen.is_cut
    # A line of a code block is in it whole or not at all.
    for start, end in code_lines(text):
        overlaps = start < chosen.end and chosen.start < end and end > start
        if overlaps:
            assert chosen.start <= start and end <= chosen.end, (start, end, chosen)
    # The passage holds at least as much of the query as any single piece it could show.
    best_piece = max(
        (
            weight_in(text[unit.start : unit.end], query)
            for unit in units(text, limit)
            if unit.end - unit.start <= limit
        ),
        default=0.0,
    )
    assert weight_in(chosen.text, query) >= best_piece - 1e-9


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.text("bcdfghjklmnpqrstvwxz", min_size=6, max_size=9),
        min_size=8,
        max_size=12,
        unique=True,
    )
)
def test_of_two_stretches_holding_the_same_words_the_earlier_is_shown(words: list[str]) -> None:
    # The same query words in two stretches of one length: the earlier is shown, whatever
    # the words (their order in a set follows their hashes; a float sum, its order).
    found = [terms(word) for word in words]
    query = {t[0]: 1 / (3 + 7 * i) for i, t in enumerate(found) if len(t) == 1}
    half = len(words) // 2
    early = " ".join(words[:half]) + ". " + " ".join(words[half:]) + "."
    late = " ".join(words) + " zz."
    filler = " ".join(["filler words here."] * 30)
    text = f"{early} {filler} {late} {filler}"
    chosen = passage(text, query, len(late) + 2)
    assert chosen.start == 0, chosen


def long_reply(topic: str, ref: str, at: float) -> MemoryItem:
    """A long assistant message (about 3,000 characters) with `topic` in its middle."""
    filler = "Here is one more general remark about planning the week ahead. " * 22
    body = f"{filler}\n\nAbout {topic}: the answer is in this sentence.\n\n{filler}"
    return MemoryItem(
        id=f"item-{ref}",
        layer=Layer.EPISODIC,
        type=ItemType.TURN,
        title=body[:80],
        content=f"Assistant: {body}",
        scope="s",
        created_at=at,
        updated_at=at,
        tags=["turn"],
        references=[ref],
    )


def test_a_long_item_shows_its_matching_passage_with_its_cuts_and_message_named() -> None:
    item = long_reply("the zeppelin hangar lease", "tg:7", START)
    focus = Focus({term: 1.0 for term in terms("zeppelin hangar")})
    line = render_line(item, tz=UTC, focus=focus)
    assert "zeppelin hangar lease" in line
    assert "excerpt of tg:7" in line and line.count("…") == 2
    assert estimate_item_tokens(line) * 4 < estimate_item_tokens(item.content)
    # A short item shows whole, without a mark.
    short = long_reply("x", "tg:8", START)
    short.content = "User: the zeppelin hangar lease ends in May"
    assert render_line(short, tz=UTC, focus=focus) == f"- 2023-11-14: {short.content}"


def test_one_budget_carries_the_matching_part_of_many_long_replies() -> None:
    # Five long replies each hold one line the question is about; whole, at ~750 tokens
    # each, the default budget held two of them.
    items: dict[str, MemoryItem] = {}
    index = BM25Index()
    for number in range(5):
        item = long_reply(f"zeppelin hangar {number}", f"tg:{number + 1}", START + number * 86400)
        items[item.id] = item
        index.add(item.id, terms(indexed_text(item)))
    for number in range(30):
        other = long_reply("nothing special", f"tg:{number + 100}", START - 86400 * (number + 1))
        items[other.id] = other
        index.add(other.id, terms(indexed_text(other)))
    config = MemoryConfig()
    query = MemoryQuery.for_config(
        "What did we say about the zeppelin hangar?", "s", START + 10 * 86400, config
    )
    pack = build_pack(items, index, query)
    found = {ref for packed in pack.items for ref in packed.item.references}
    assert {f"tg:{n}" for n in range(1, 6)} <= found
    assert pack.diagnostics.total_tokens <= config.soft_prompt_budget_tokens
    assert pack.rendered.count("excerpt of tg:") >= 5
    # Each item is priced by the line it shows.
    assert all(p.tokens == estimate_item_tokens(p.line) for p in pack.items)


@pytest.fixture
async def app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[App]:
    built = build_app(make_settings(workspace, openai_server))
    yield built
    await built.close()


async def test_the_model_reads_the_whole_message_an_excerpt_names(
    app: App, openai_server: FakeOpenAIServer
) -> None:
    scope = "console:local"
    rest = "The lease ends on the last day of May and renews for a year unless cancelled. "
    message = "About the zeppelin hangar: we signed the lease on Monday. " + rest * 30
    app.memory.record.record_turn(
        scope=scope,
        user_text=message,
        assistant_text="",
        at=START,
        config=MemoryConfig(),
        tz=UTC,
        message_refs=["tg:42"],
        speaker="Assistant",
    )
    openai_server.script(
        tool_call("memory", {"operation": "read", "id": "tg:42"}), reply("It renews yearly.")
    )
    await ask(app, "when was the zeppelin hangar lease signed?", chat=CONSOLE_CHAT)
    first = openai_server.requests[0]
    memory = context_text(first).split("# Memory", 1)[1]
    line = next(line for line in memory.splitlines() if "zeppelin" in line)
    assert "excerpt of tg:42" in line
    assert len(memory) < len(message)
    whole = tool_messages(openai_server.last_request())[-1]["content"]
    # Every piece the message was kept in, in order.
    assert whole.startswith("message tg:42:")
    assert re.sub(r"\s+", " ", whole).count("renews for a year") == 30
