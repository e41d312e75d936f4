"""`mnemobot init` against the fake Telegram and OpenAI servers; where settings are read."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemobot.bot.cli.main import main
from mnemobot.bot.runtime_sections import open_runtime_config
from mnemobot.config.settings import load_settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import run_mnemobot, subprocess_env

API_KEY = "sk-test-not-to-be-shown"


def init_flags(telegram: TelegramServer, llm: FakeOpenAIServer, **overrides: str) -> list[str]:
    flags = {
        "--token": telegram.token,
        "--base-url": llm.base_url,
        "--model": "fake-model",
        "--api-key": API_KEY,
        "--allowed-users": "42,43",
    }
    flags.update(overrides)
    return [part for pair in flags.items() for part in pair]


@pytest.mark.slow
def test_init_without_a_terminal_writes_a_private_env_file_that_run_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "conf" / "bot.env"
    with TelegramServer() as telegram, FakeOpenAIServer() as llm:
        flags, base_url = init_flags(telegram, llm), llm.base_url
        telegram_base_url = telegram.base_url
        result = subprocess.run(
            [sys.executable, "-m", "mnemobot", "init", "--env-file", str(env_file), *flags],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env=subprocess_env(TELEGRAM_API_BASE_URL=telegram.base_url),
            check=False,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the token belongs to @mnemo_test_bot" in result.stdout
    assert f"Wrote {env_file}" in result.stdout
    assert telegram.token not in result.stdout + result.stderr
    assert API_KEY not in result.stdout + result.stderr
    assert env_file.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in env_file.parent.iterdir()] == ["bot.env"]  # no temp file left
    monkeypatch.setenv("MNEMOBOT_ENV_FILE", str(env_file))
    # The Bot API server the token was checked against is the one the bot will use.
    monkeypatch.delenv("TELEGRAM_API_BASE_URL", raising=False)
    settings = load_settings()
    assert settings.telegram_api_base_url == telegram_base_url
    assert settings.telegram_bot_token is not None
    assert settings.telegram_bot_token.get_secret_value() == telegram.token
    assert settings.openai_base_url == base_url
    assert settings.bot_model == "fake-model"
    assert sorted(settings.telegram_allowed_users) == [42, 43]


def test_a_failed_check_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = tmp_path / "bot.env"
    with TelegramServer() as telegram, FakeOpenAIServer(models=["qwen2.5", "llama3"]) as llm:
        monkeypatch.setenv("TELEGRAM_API_BASE_URL", telegram.base_url)
        args = ["init", "--non-interactive", "--env-file", str(env_file)]
        assert main([*args, *init_flags(telegram, llm, **{"--token": "1:WRONG-TOKEN"})]) == 1
        assert "rejected TELEGRAM_BOT_TOKEN" in capsys.readouterr().err
        assert main([*args, *init_flags(telegram, llm)]) == 1
        err = capsys.readouterr().err
        assert "does not serve 'fake-model'; it offers: qwen2.5, llama3; pick one" in err
        assert main([*args, *init_flags(telegram, llm, **{"--allowed-users": "me"})]) == 1
        assert "TELEGRAM_ALLOWED_USERS: 'me' is not a numeric user id" in capsys.readouterr().err
        assert main(["init", "--non-interactive", "--env-file", str(env_file)]) == 1
    err = capsys.readouterr().err
    assert "pass --token" in err and "nothing was written" in err
    assert not env_file.exists()


def test_init_console_sets_up_the_model_alone_then_chat_works_and_run_says_what_is_missing(
    tmp_path: Path, workspace: Path
) -> None:
    env_file = tmp_path / "bot.env"
    with FakeOpenAIServer(models=["qwen2.5"]) as llm:
        made = run_mnemobot(
            "init",
            "--console",
            "--non-interactive",
            "--env-file",
            str(env_file),
            "--base-url",
            llm.base_url,
            "--model",
            "qwen2.5",
            BOT_WORKSPACE=str(workspace),
        )
        assert made.returncode == 0, made.stdout + made.stderr
        assert "Telegram bot token (from" not in made.stdout
        assert f"Next: `mnemobot --env-file {env_file} chat` talks to the bot here" in made.stdout
        written = env_file.read_text()
        assert f"OPENAI_BASE_URL={llm.base_url}\n" in written and "BOT_MODEL=qwen2.5\n" in written
        assert "TELEGRAM" not in written
        chat = run_mnemobot(
            "--env-file", str(env_file), "chat", input="hello\n", BOT_WORKSPACE=str(workspace)
        )
        assert chat.returncode == 0, chat.stderr
        assert chat.stdout.startswith("echo: hello\n")
    ran = run_mnemobot("--env-file", str(env_file), "run", BOT_WORKSPACE=str(workspace))
    assert ran.returncode == 2
    [line] = ran.stderr.strip().splitlines()
    assert "TELEGRAM_BOT_TOKEN is not set" in line and "`mnemobot chat` works without one." in line


def test_an_empty_token_at_the_terminal_sets_up_the_console_only(workspace: Path) -> None:
    with FakeOpenAIServer(models=["qwen2.5"]) as llm:
        env = subprocess_env(BOT_WORKSPACE=str(workspace))
        terminal = Terminal([sys.executable, "-m", "mnemobot", "init"], env)
        terminal.answer("(from @BotFather; empty: the console only, `mnemobot chat`): ", "")
        terminal.answer("Model server base URL (empty for OpenAI): ", llm.base_url)
        terminal.answer("API key (empty for local servers): ", "")
        terminal.answer("Model [qwen2.5]: ", "")
        terminal.expect("Next: `mnemobot chat` talks to the bot here")
        assert terminal.exit_code() == 0
    assert "allowed to talk" not in terminal.output
    written = (Path.home() / ".mnemobot" / ".env").read_text()
    assert "BOT_MODEL=qwen2.5\n" in written and "TELEGRAM" not in written


def test_settings_come_from_home_with_the_current_directory_winning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with TelegramServer() as telegram, FakeOpenAIServer() as llm:
        monkeypatch.setenv("TELEGRAM_API_BASE_URL", telegram.base_url)
        assert main(["init", "--non-interactive", *init_flags(telegram, llm)]) == 0
        base_url = llm.base_url
    home_env = Path.home() / ".mnemobot" / ".env"
    assert home_env.stat().st_mode & 0o777 == 0o600
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_settings().bot_model == "fake-model"
    (elsewhere / ".env").write_text("BOT_MODEL=local-model\n")
    settings = load_settings()
    assert settings.bot_model == "local-model"
    assert settings.openai_base_url == base_url


class Terminal:
    """A child process on a pseudo-terminal: read until a prompt, type an answer."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            os.execvpe(argv[0], argv, env)
        self.output = ""
        self.seen = 0  # output before this was matched already

    def expect(self, text: str, timeout: float = 30) -> None:
        """Wait for `text` after what was matched before (a prompt asked again counts)."""
        deadline = time.monotonic() + timeout
        while text not in self.output[self.seen :]:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError(f"no {text!r} in {self.output!r}")
            try:
                self.output += os.read(self.fd, 4096).decode(errors="replace")
            except OSError:  # the child exited
                raise AssertionError(f"no {text!r} in {self.output!r}") from None
        self.seen = self.output.index(text, self.seen) + len(text)

    def answer(self, prompt: str, text: str) -> None:
        self.expect(prompt)
        os.write(self.fd, f"{text}\n".encode())

    def exit_code(self) -> int:
        with contextlib.suppress(OSError):
            while os.read(self.fd, 4096):
                pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


@pytest.mark.slow
def test_run_at_a_terminal_with_nothing_configured_offers_init(workspace: Path) -> None:
    with TelegramServer() as telegram, FakeOpenAIServer(models=["qwen2.5", "llama3"]) as llm:
        env = subprocess_env(BOT_WORKSPACE=str(workspace), TELEGRAM_API_BASE_URL=telegram.base_url)
        terminal = Terminal([sys.executable, "-m", "mnemobot", "run"], env)
        terminal.answer("Set them up now with `mnemobot init`? [Y/n]", "")
        terminal.answer("Telegram bot token (from @BotFather): ", "1:WRONG")
        terminal.expect("copy it again from @BotFather")
        # getpass discards what was typed before it asks, so wait for the prompt itself.
        terminal.answer("Telegram bot token (from @BotFather): ", telegram.token)
        terminal.answer("the bot tells whoever writes to it their id): ", "42")
        terminal.answer("Model server base URL (empty for OpenAI): ", llm.base_url)
        terminal.answer("API key (empty for local servers): ", "")
        terminal.answer("Model [qwen2.5]: ", "gpt-4o-mini")
        terminal.expect("it offers: qwen2.5, llama3; pick one")
        terminal.answer("Model [qwen2.5]: ", "llama3")
        # After a successful set-up the first `run` goes on: the checks, then the bot.
        terminal.expect("Checking the settings, then starting the bot:")
        terminal.expect("ok   llm: ")
        terminal.expect("ok   telegram: token valid")
        telegram.send_text("hello bot", chat_id=42)
        [answer] = telegram.wait_for_messages(42, 1, timeout=30)
        assert answer["text"] == "echo: hello bot"
        os.kill(terminal.pid, signal.SIGTERM)
        assert terminal.exit_code() == 0
    assert "Next: `mnemobot doctor`" not in terminal.output
    assert telegram.token not in terminal.output
    written = Path.home() / ".mnemobot" / ".env"
    assert written.stat().st_mode & 0o777 == 0o600
    assert "BOT_MODEL=llama3\n" in written.read_text()
    assert f"TELEGRAM_BOT_TOKEN={telegram.token}\n" in written.read_text()


def test_chat_with_no_model_server_says_what_is_missing(workspace: Path) -> None:
    piped = subprocess.run(
        [sys.executable, "-m", "mnemobot", "chat"],
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(BOT_WORKSPACE=str(workspace)),
        check=False,
    )
    assert piped.returncode == 2
    [line] = piped.stderr.strip().splitlines()
    assert "no model server is set" in line and "OPENAI_BASE_URL" in line
    assert "`mnemobot init` sets everything up" in line
    assert piped.stdout == ""


def test_chat_at_a_terminal_with_nothing_configured_offers_init_for_the_model_only(
    workspace: Path,
) -> None:
    with FakeOpenAIServer(models=["qwen2.5"]) as llm:
        env = subprocess_env(BOT_WORKSPACE=str(workspace))
        base_url = llm.base_url
        terminal = Terminal([sys.executable, "-m", "mnemobot", "chat"], env)
        terminal.answer("Set them up now with `mnemobot init`? [Y/n]", "y")
        terminal.answer("Model server base URL (empty for OpenAI): ", llm.base_url)
        terminal.answer("API key (empty for local servers): ", "")
        terminal.answer("Model [qwen2.5]: ", "")
        terminal.expect("Starting the chat:")
        # The console reads its first line once it is ready; an early line waits for it.
        terminal.answer("", "hello there")
        terminal.expect("echo: hello there")
        os.write(terminal.fd, b"\x04")  # Ctrl-D
        assert terminal.exit_code() == 0
    assert "bot token" not in terminal.output
    written = (Path.home() / ".mnemobot" / ".env").read_text()
    assert f"OPENAI_BASE_URL={base_url}\n" in written
    assert "TELEGRAM_BOT_TOKEN" not in written


def test_init_at_a_terminal_turns_on_recall_by_meaning_when_the_server_lists_an_embedder(
    workspace: Path,
) -> None:
    models = ["nomic-embed-text", "qwen2.5"]
    with TelegramServer() as telegram, FakeOpenAIServer(models=models) as llm:
        env = subprocess_env(BOT_WORKSPACE=str(workspace), TELEGRAM_API_BASE_URL=telegram.base_url)
        # Everything from flags but the model: init asks for it, then about embeddings.
        flags = ["--token", telegram.token, "--base-url", llm.base_url, "--api-key", ""]
        flags += ["--allowed-users", "42"]
        terminal = Terminal([sys.executable, "-m", "mnemobot", "init", *flags], env)
        # The embedding model is listed first, but it cannot chat: not the default.
        terminal.answer("Model [qwen2.5]: ", "")
        terminal.answer("serves 'nomic-embed-text', an embedding model.", "y")
        terminal.expect("ok  recall by meaning on with 'nomic-embed-text'")
        assert terminal.exit_code() == 0
    assert "BOT_MODEL=qwen2.5\n" in (Path.home() / ".mnemobot" / ".env").read_text()
    # What the bot reads at start: embeddings on, from the chat model's server.
    path = WorkspacePaths(workspace).runtime_config
    store = open_runtime_config(path)
    embeddings = store.current().memory.embeddings
    assert store.error is None and embeddings.enabled and embeddings.base_url is None
    assert embeddings.model == "nomic-embed-text"
    # The file lists every key, as the bot writes it at first start, and is private.
    assert '"telegram"' in path.read_text() and '"softPromptBudgetTokens"' in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600


def test_without_a_terminal_recall_by_meaning_needs_the_flag_and_keeps_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "bot-workspace"
    config = WorkspacePaths(workspace).runtime_config
    config.parent.mkdir(parents=True)
    config.write_text('{"memory": {"softPromptBudgetTokens": 1200}}')
    env_file = tmp_path / "bot.env"
    # The workspace comes from the env file init updates.
    env_file.write_text(f"BOT_WORKSPACE={workspace}\n")
    args = ["init", "--non-interactive", "--env-file", str(env_file)]

    def memory() -> tuple[int, bool, str | None]:
        m = open_runtime_config(config).current().memory
        return m.soft_prompt_budget_tokens, m.embeddings.enabled, m.embeddings.model

    with TelegramServer() as telegram, FakeOpenAIServer(models=["qwen2.5"]) as llm:
        flags = init_flags(telegram, llm, **{"--model": "qwen2.5"})
        monkeypatch.setenv("TELEGRAM_API_BASE_URL", telegram.base_url)
        assert main([*args, *flags, "--embeddings"]) == 1
        assert "lists no embedding model" in capsys.readouterr().err
        llm.models = ["qwen2.5", "text-embedding-3-small"]
        assert main([*args, *flags]) == 0
        out = capsys.readouterr().out
        assert "`mnemobot init --embeddings` turns on recall by meaning" in out
        assert memory() == (1200, False, None)
        assert main([*args, *flags, "--embeddings"]) == 0
    assert "ok  recall by meaning on with 'text-embedding-3-small'" in capsys.readouterr().out
    assert memory() == (1200, True, "text-embedding-3-small")
    assert f"BOT_WORKSPACE={workspace}\n" in env_file.read_text()
