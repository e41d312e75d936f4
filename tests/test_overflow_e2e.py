"""Context safety through `mnemobot chat`: overflow recovery and a long conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemobot.base.atomic_file import read_jsonl
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    context_text,
    reply,
    user_texts,
)
from tests.conftest import write_runtime_config
from tests.test_console_e2e import answers, run_chat


def answer_everything(body: dict[str, object]) -> object:
    system = context_text(body)
    if system.startswith("You compress a chat"):
        return reply("SESSION INTENT: chat\nSUMMARY: long talk\nARTIFACTS: none\nNEXT STEPS: none")
    if system.startswith("You keep an assistant's long-term memory"):
        return reply("NO_REPLY")
    return reply(f"answer to {user_texts(body)[-1][:12]}")


@pytest.mark.parametrize("form", ["openai", "vllm", "llamacpp"])
def test_context_overflow_is_recovered_in_each_server_form(
    workspace: Path, openai_server: FakeOpenAIServer, form: str
) -> None:
    # Auto compaction off: only the overflow error can make the bot compact.
    write_runtime_config(workspace, {"compaction": {"enabled": False}, "llm": {"maxRetries": 0}})
    openai_server.responder = answer_everything
    openai_server.max_request_chars = 9_000
    openai_server.overflow_form = form
    lines = [f"q{i:02d} " + "blah " * 200 for i in range(12)]
    result = run_chat("".join(line + "\n" for line in lines), workspace, openai_server)
    assert result.returncode == 0, result.stderr
    assert answers(result.stdout) == [f"answer to {line[:12]}" for line in lines]
    rejected = [r for r in openai_server.recorded_requests if r.rejected]
    assert rejected, "the fake server never overflowed; the test proves nothing"
    assert "context_length_exceeded" not in result.stdout and "400" not in result.stdout


def pasted_text(chars: int) -> str:
    """A paste of `chars` characters whose beginning and end can be told apart."""
    body = "".join(f"line {i} of the pasted log says nothing new. " for i in range(chars // 40))
    return "OPENING zanzibar question. " + body + " CLOSING what does quetzalcoatl mean?"


@pytest.mark.slow
def test_a_message_bigger_than_the_window_is_answered_from_its_head_and_tail(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """The newcomer's llama.cpp server at 2048 tokens and a 13k-character paste: the model
    gets the beginning and the end, the user is told, nothing of the message is lost."""
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    openai_server.responder = answer_everything
    openai_server.context_window = 2048
    openai_server.overflow_form = "llamacpp"
    text = pasted_text(13_000)
    result = run_chat(text + "\n", workspace, openai_server)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("answer to OPENING zan"), result.stdout
    assert "is more than this model can read at once" in result.stdout
    assert "the whole message is kept" in result.stdout
    assert "/compact" not in result.stdout
    answered = [r for r in openai_server.recorded_requests if not r.rejected][-1].body
    shown = user_texts(answered)[-1]
    assert shown.startswith("OPENING zanzibar") and shown.endswith("quetzalcoatl mean?")
    assert len(shown) < len(text)
    session = json.loads((workspace / "sessions" / "console:local.json").read_text())
    assert [m["content"] for m in session["messages"] if m["role"] == "user"] == [text]
    items = "".join(
        p.read_text() for p in (workspace / "memory" / "console:local" / "items").rglob("*.jsonl")
    )
    # The whole message is in memory, its middle and end too, not only what the model saw.
    assert "line 150 of the pasted log" in items and "quetzalcoatl" in items


def test_a_window_too_small_for_any_part_never_suggests_compact(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    openai_server.max_request_chars = 300
    result = run_chat(pasted_text(5_000) + "\n", workspace, openai_server)
    assert result.returncode == 0
    assert result.stdout.startswith("Sorry, this conversation no longer fits")
    assert "/compact" not in result.stdout and "/new" not in result.stdout
    assert "a model with a larger context window" in result.stdout


@pytest.mark.slow
def test_many_long_messages_all_answered_with_nothing_lost(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """The 'done when' of the compaction issue, scripted through `mnemobot chat`: enough
    long messages for a small context to compact several times (eight: seven on its own,
    then /compact; the issue's 300 messages cost 16 s of the suite)."""
    write_runtime_config(
        workspace,
        {"compaction": {"maxContextTokens": 4_500}, "llm": {"maxRetries": 0}},
    )
    openai_server.responder = answer_everything
    openai_server.max_request_chars = 40_000  # any bigger request is a context overflow
    count = 80
    lines = [
        f"m{i:03d} " + f"long message number {i} about many things " * 12 for i in range(count)
    ]
    script = "".join(line + "\n" for line in lines) + "/compact 2\n"
    result = run_chat(script, workspace, openai_server)
    assert result.returncode == 0, result.stderr[-2000:]
    out = answers(result.stdout)
    assert out[:count] == [f"answer to {line[:12]}" for line in lines]
    assert out[count].startswith("Compacted with summary: removed ")
    assert out[count].endswith(" messages, kept last 2.")
    session = json.loads((workspace / "sessions" / "console:local.json").read_text())
    assert session["messages"][0]["content"].startswith("[Conversation summary]\nSESSION INTENT")
    logged = read_jsonl(workspace / "sessions" / "console:local.log.jsonl").records
    everything = {m.get("content") for m in logged} | {
        m.get("content") for m in session["messages"]
    }
    assert all(line.strip() in everything for line in lines)
    assert session["metadata"]["compactions"] >= 5
