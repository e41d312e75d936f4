"""A local model with a small context window works out of the box.

The fake server enforces a 2048-token window the way llama.cpp-based servers do; the bot
learns the window (from the server's own report, or from the first overflow error), keeps
it in the workspace, sizes each answer to what fits and compacts against the real window.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mnemobot.bot.app import App, build_app
from mnemobot.bot.cli.doctor import run_checks
from mnemobot.bot.llm.window_reports import answer_tokens_that_fit, overflow_figures
from mnemobot.bot.turn.commands import ParsedCommand
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.model.windows import ModelWindow, ModelWindowStore
from mnemobot.systems.core.context import ChatRef
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    OverflowForm,
    WindowReporter,
    context_text,
    reply,
    request_tokens,
    system_text,
    user_texts,
)
from tests.conftest import CONSOLE_CHAT, ask, make_settings, write_runtime_config
from tests.mcp_harness import wait_until

WINDOW = 2048
# A long turn: ~1,300 characters, about 330 tokens, like pasting a paragraph.
LONG_TEXT = "we talked about the garden, the tomatoes, the rain and the old fence; " * 18


def local_model(body: dict[str, object]) -> object:
    system = context_text(body)
    if system.startswith("You compress a chat"):
        return reply(
            "SESSION INTENT: chat\nSUMMARY: garden talk\nARTIFACTS: none\nNEXT STEPS: none"
        )
    if system.startswith("You keep an assistant's long-term memory"):
        return reply("NO_REPLY")
    # A long answer too, as a chatty small model gives.
    return reply(f"answer to {user_texts(body)[-1][:3]}: " + "sure, tomatoes like sun. " * 20)


def windows_file(workspace: Path) -> dict[str, dict[str, object]]:
    return json.loads((workspace / "preferences" / "model-windows.json").read_text())


def serve_small_model(
    server: FakeOpenAIServer, form: OverflowForm, reporter: WindowReporter | None
) -> None:
    server.responder = local_model
    server.context_window = WINDOW
    server.overflow_form = form
    server.window_reported_by = reporter


RUSSIAN = ChatRef("console", "local", language="ru")


async def status(app: App) -> str:
    return await app.commands.run(CONSOLE_CHAT, ParsedCommand("status", ""))


def accepted_requests_fit(server: FakeOpenAIServer) -> bool:
    return all(
        request_tokens(r.body) + int(r.body["max_tokens"]) <= WINDOW
        for r in server.recorded_requests
        if not r.rejected
    )


async def test_a_long_chat_learns_the_window_from_the_first_overflow_error(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """llama-cpp-python's server: reports no window; its overflow error states it."""
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    serve_small_model(openai_server, "openai", None)
    app = build_app(make_settings(workspace, openai_server))
    try:
        replies = [await ask(app, f"t{turn:02d} {LONG_TEXT}") for turn in range(26)]
        shown = await status(app)
    finally:
        await app.close()

    assert [r[:13] for r in replies] == [f"answer to t{turn:02d}" for turn in range(26)]
    rejected = [r for r in openai_server.recorded_requests if r.rejected]
    # One overflow to learn the window (answered on the retry), none after.
    assert len(rejected) == 1
    retry = openai_server.recorded_requests[1].body
    assert retry["max_tokens"] < WINDOW
    # The retry carries only the tool a small window keeps, and its prompt no word of the
    # memory tool it went without.
    assert [tool["function"]["name"] for tool in retry["tools"]] == ["schedule"]
    assert "Use the `memory` tool" in system_text(openai_server.recorded_requests[0].body)
    assert "Use the `memory` tool" not in system_text(retry)
    assert accepted_requests_fit(openai_server)
    session = json.loads((workspace / "sessions" / "console:local.json").read_text())
    # Two long exchanges fill this window; it compacts at most every other turn: memory
    # yields its room to the conversation instead of making it compact...
    assert 1 <= session["metadata"]["compactions"] <= 26 // 2
    # ...and still brings back, as a passage, turns the compaction took out of the session.
    newest = [
        str(r.body["messages"][-1]["content"])
        for r in openai_server.recorded_requests
        if not r.rejected and not context_text(r.body).startswith(("You compress", "You keep"))
    ]
    assert sum("(excerpt): User: t" in text for text in newest) >= 5
    [(key, entry)] = windows_file(workspace).items()
    assert key == f"{openai_server.base_url} gpt-4o-mini"
    assert (entry["tokens"], entry["source"]) == (WINDOW, "overflow error")
    assert "Context window: 2,048 tokens (learned from an overflow error" in shown
    assert "of 1,228 tokens before compaction" in shown

    # After a restart the window is known: not a single overflow.
    openai_server.clear()
    restarted = build_app(make_settings(workspace, openai_server))
    try:
        assert (await ask(restarted, f"t26 {LONG_TEXT}")).startswith("answer to t26")
    finally:
        await restarted.close()
    assert not [r for r in openai_server.recorded_requests if r.rejected]
    assert accepted_requests_fit(openai_server)


@pytest.mark.parametrize(
    ("reporter", "form", "detail"),
    [
        ("llamacpp", "llamacpp", "/props n_ctx"),
        ("vllm", "vllm", "/models max_model_len"),
        ("ollama", "openai", "/api/ps context_length"),
        ("lmstudio", "openai", "/api/v0/models loaded_context_length"),
    ],
)
async def test_a_window_the_server_reports_is_used_before_any_overflow(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    reporter: WindowReporter,
    form: OverflowForm,
    detail: str,
) -> None:
    write_runtime_config(workspace, {"llm": {"maxRetries": 0}})
    serve_small_model(openai_server, form, reporter)
    app = build_app(make_settings(workspace, openai_server))
    try:
        replies = [await ask(app, f"t{turn:02d} {LONG_TEXT}") for turn in range(8)]
        shown = await status(app)
    finally:
        await app.close()
    assert all(r.startswith(f"answer to t{turn:02d}") for turn, r in enumerate(replies))
    assert not [r for r in openai_server.recorded_requests if r.rejected]
    assert accepted_requests_fit(openai_server)
    [entry] = windows_file(workspace).values()
    assert (entry["tokens"], entry["source"], entry["detail"]) == (WINDOW, "server", detail)
    assert f"Context window: 2,048 tokens (reported by the server: {detail}" in shown


async def test_the_server_is_asked_for_its_window_at_start_before_any_message(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    serve_small_model(openai_server, "llamacpp", "llamacpp")
    app = build_app(make_settings(workspace, openai_server))
    try:
        app.start_background()
        windows = workspace / "preferences" / "model-windows.json"
        await wait_until(windows.exists, 10, "the server's answer, kept")
        shown = await status(app)
    finally:
        await app.close()
    assert "Context window: 2,048 tokens (reported by the server: /props n_ctx" in shown
    assert openai_server.requests == []
    # Its /v1/models names the trained length, which is not the window it runs.
    assert windows_file(workspace)[f"{openai_server.base_url} gpt-4o-mini"]["tokens"] == WINDOW


async def test_a_window_learned_before_is_what_the_start_logs_when_the_server_says_none(
    workspace: Path, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """llama-cpp-python never says its window: the one its overflow error taught in an
    earlier run is used, and the log says that, not that llm.maxInputTokens is assumed."""
    caplog.set_level(logging.INFO, logger="mnemobot.bot.llm.client")
    serve_small_model(openai_server, "openai", None)
    ModelWindowStore.in_workspace(workspace).put(
        openai_server.base_url, "gpt-4o-mini", ModelWindow(WINDOW, "overflow error")
    )
    app = build_app(make_settings(workspace, openai_server))
    try:
        app.start_background()

        def said() -> list[str]:
            return [r.getMessage() for r in caplog.records if "does not say" in r.getMessage()]

        await wait_until(lambda: bool(said()), 10, "the window probe's line")
    finally:
        await app.close()
    [line] = said()
    assert "llm.maxInputTokens is assumed" not in line
    assert "the one learned before is used: 2,048 tokens (learned from an overflow error" in line


@pytest.mark.parametrize(
    ("num_ctx", "figure", "detail"),
    [
        (None, "4,096", "/api/show: Ollama's default window (the model takes 131,072)"),
        (2048, "2,048", "/api/show num_ctx"),
    ],
)
async def test_ollama_with_no_model_loaded_is_not_taken_at_its_trained_length(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    num_ctx: int | None,
    figure: str,
    detail: str,
) -> None:
    """Ollama cuts a prompt longer than its window silently: no overflow error teaches it."""
    serve_small_model(openai_server, "openai", "ollama")
    openai_server.ollama_loaded = False
    openai_server.ollama_num_ctx = num_ctx
    app = build_app(make_settings(workspace, openai_server))
    try:
        await ask(app, "hello")
        shown = await status(app)
    finally:
        await app.close()
    assert f"Context window: {figure} tokens (reported by the server: {detail}" in shown


async def test_a_local_server_that_does_not_say_its_window_is_not_asked_for_a_long_answer(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    """llama-cpp-python states its window only in an overflow error: until then an answer
    asks for a quarter of the smallest common local window, not llm.maxOutputTokens (2048,
    which is its whole window)."""
    serve_small_model(openai_server, "openai", None)
    app = build_app(make_settings(workspace, openai_server))
    try:
        answer = await ask(app, "hello")
        shown = await status(app)
    finally:
        await app.close()
    assert answer.startswith("answer to hel")
    assert openai_server.requests[0]["max_tokens"] == 512
    assert not [r for r in openai_server.recorded_requests if r.rejected]
    assert (
        "Context window: 128,000 tokens (assumed: the server does not say; from the config: "
        "llm.maxInputTokens)"
    ) in shown
    results = await run_checks(make_settings(workspace, openai_server), lambda line: None)
    [check] = [r for r in results if r.name == "context window"]
    assert "128,000 tokens (assumed: the server does not say; llm.maxInputTokens)" in check.detail


@pytest.mark.parametrize(
    ("reporter", "max_output", "asked", "named"),
    [
        (
            None,
            2048,
            512,
            "512 tokens, the most an answer from a server on this machine or network asks "
            "for until the server says its context window",
        ),
        ("llamacpp", 2048, 512, "512 tokens, a quarter of the model's 2,048-token window"),
        (None, 200, 200, "llm.maxOutputTokens, 200 tokens"),
    ],
)
async def test_an_answer_cut_at_its_length_limit_names_the_limit_that_was_in_force(
    workspace: Path,
    openai_server: FakeOpenAIServer,
    reporter: WindowReporter | None,
    max_output: int,
    asked: int,
    named: str,
) -> None:
    """SmolLM2 on llama-cpp-python talks until its 512 tokens run out: the note named
    llm.maxOutputTokens (2,048), which had nothing to do with it."""
    write_runtime_config(workspace, {"llm": {"maxRetries": 0, "maxOutputTokens": max_output}})
    serve_small_model(openai_server, "openai", reporter)
    openai_server.script(reply("Once upon a time a dragon", finish_reason="length"))
    app = build_app(make_settings(workspace, openai_server))
    try:
        answer = await ask(app, "tell me a long story")
    finally:
        await app.close()
    assert openai_server.requests[0]["max_tokens"] == asked
    assert answer == (
        "Once upon a time a dragon\n\n(the model stopped before the end of this answer: it "
        f'reached its length limit ({named}); say "go on" for the rest)'
    )


async def test_a_russian_reader_reads_the_length_limit_in_russian(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    # The note was Russian around an English "96 tokens, ..." (found live).
    write_runtime_config(workspace, {"llm": {"maxRetries": 0, "maxOutputTokens": 2048}})
    serve_small_model(openai_server, "openai", "llamacpp")
    openai_server.script(reply("Жил-был дракон", finish_reason="length"))
    app = build_app(make_settings(workspace, openai_server))
    try:
        answer = await ask(app, "расскажи длинную сказку", chat=RUSSIAN)
    finally:
        await app.close()
    assert answer.endswith(
        "(512 токенов — четверть окна модели в 2\u00a0048 токенов); напишите «продолжай», "
        "чтобы получить остальное)"
    )


async def test_status_shows_the_configured_window_while_nothing_is_learned(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    app = build_app(make_settings(workspace, openai_server))
    try:
        shown = await status(app)
    finally:
        await app.close()
    # Not yet asked: the figure is only the configured one, and says so.
    assert (
        "Context window: 128,000 tokens (configured: llm.maxInputTokens; the server has not "
        "said its window yet)"
    ) in shown


async def test_doctor_shows_the_window_and_where_it_came_from(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    serve_small_model(openai_server, "llamacpp", "llamacpp")
    results = await run_checks(make_settings(workspace, openai_server), lambda line: None)
    [check] = [r for r in results if r.name == "context window"]
    assert check.ok
    assert check.detail.startswith("gpt-4o-mini has 2,048 tokens (reported by the server")
    assert "/props n_ctx" in check.detail


@pytest.mark.parametrize("models_list", [True, False])
async def test_doctor_says_the_window_before_the_first_run_and_makes_no_workspace(
    tmp_path: Path, openai_server: FakeOpenAIServer, models_list: bool
) -> None:
    """A fresh install: no workspace yet (`run` makes it), nothing learned. `models_list`
    False: a server without a models list (the llm check only warns)."""
    fresh = tmp_path / "not-yet"
    serve_small_model(openai_server, "llamacpp", "llamacpp")
    if not models_list:
        openai_server.models = None
    results = await run_checks(make_settings(fresh, openai_server), lambda line: None)
    [check] = [r for r in results if r.name == "context window"]
    assert check.line().startswith("ok   context window: gpt-4o-mini has 2,048 tokens (reported")
    openai_server.window_reported_by = None
    results = await run_checks(make_settings(fresh, openai_server), lambda line: None)
    [check] = [r for r in results if r.name == "context window"]
    assert check.line() == (
        "ok   context window: gpt-4o-mini: 128,000 tokens (assumed: the server does not say; "
        "llm.maxInputTokens), used until an overflow error states the real window"
    )
    assert not fresh.exists()


@pytest.mark.parametrize(
    ("message", "fields", "figures"),
    [
        (  # llama-cpp-python's server, measured; vLLM before 0.6 reads the same
            "This model's maximum context length is 2048 tokens. However, you requested "
            "4285 tokens (2237 in the messages, 2048 in the completion). Please reduce the "
            "length of the messages or completion.",
            {},
            (2048, 2237),
        ),
        (  # OpenAI
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130512 tokens. Please reduce the length of the messages.",
            {"code": "context_length_exceeded"},
            (128000, 130512),
        ),
        (  # vLLM
            "This model's maximum context length is 1536 tokens. However, your request has "
            "4176 input tokens. Please reduce the length of the input messages.",
            {},
            (1536, 4176),
        ),
        (  # llama.cpp's server
            "the request exceeds the available context size, try increasing it",
            {"type": "exceed_context_size_error", "n_prompt_tokens": 2500, "n_ctx": 2048},
            (2048, 2500),
        ),
        ("prompt is too long", {}, (None, None)),
    ],
)
def test_overflow_errors_state_window_and_prompt(
    message: str, fields: dict[str, object], figures: tuple[int | None, int | None]
) -> None:
    assert overflow_figures(message, fields) == figures


def test_answer_budget_is_what_the_window_leaves_within_cap_and_floor() -> None:
    assert answer_tokens_that_fit(2048, 1500, 2048) == 2048 - 1651
    assert answer_tokens_that_fit(2048, 1000, 2048) == 512  # a quarter of the window at most
    assert answer_tokens_that_fit(2048, 100, 300) == 300
    assert answer_tokens_that_fit(2048, 5000, 2048) == 256
    assert answer_tokens_that_fit(128_000, 1000, 2048) == 2048


def test_a_small_window_narrows_input_and_memory_budgets_once() -> None:
    config = RuntimeConfig()
    narrowed = config.for_context_window(WINDOW)
    assert narrowed.llm.max_input_tokens == 1536
    assert narrowed.compaction_threshold_tokens() == 1228
    memory = narrowed.memory
    memory_parts = (
        memory.max_prompt_budget_tokens
        + memory.operator_memory_budget_tokens
        + memory.scope_memory_budget_tokens
    )
    assert memory_parts <= 0.3 * 1536
    assert narrowed.for_context_window(WINDOW) == narrowed
    assert config.for_context_window(1_000_000) == config
