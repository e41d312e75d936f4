"""`mnemobot doctor`: one line per check against real (fake) servers, exit 1 on failure."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from mnemobot.bot.cli.doctor import check_allowed_users
from mnemobot.bot.cli.probes import ProbeError, list_models, telegram_username
from mnemobot.bot.cli.startup import log_startup
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, error
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import make_settings, run_mnemobot, write_runtime_config


def run_doctor(**env: str) -> subprocess.CompletedProcess[str]:
    return run_mnemobot("doctor", **env)


def checks(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """`{"ok   llm": detail, ...}` of the result lines (not the `...` waiting lines)."""
    return dict(
        line.split(": ", 1) for line in result.stdout.splitlines() if not line.startswith("...")
    )


def test_all_checks_pass_and_nothing_is_written(
    tmp_path: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    with TelegramServer() as telegram:
        env_file = tmp_path / ".env"
        env_file.write_text(
            f"BOT_WORKSPACE={workspace}\nOPENAI_BASE_URL={openai_server.base_url}\n"
            f"TELEGRAM_BOT_TOKEN={telegram.token}\nTELEGRAM_API_BASE_URL={telegram.base_url}\n"
            "TELEGRAM_ALLOWED_USERS=42\n"
        )
        result = run_doctor()
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "ok   settings",
        "ok   allowed users",
        "ok   operators",
        "ok   workspace",
        "ok   runtime config",
        "...  llm",
        "ok   llm",
        "...  speech to text",
        "ok   speech to text",
        "...  context window",
        "ok   context window",
        "...  tools",
        "ok   tools",
        "...  embeddings",
        "ok   embeddings",
        "...  telegram",
        "ok   telegram",
        "ok   schedule",
    ]
    assert lines[0] == f"ok   settings: read {env_file}"
    assert lines[2] == "ok   operators: 42 (the one allowed user)"
    # Not in its models list, but it transcribed half a second of silence.
    assert lines[8] == (
        f"ok   speech to text: {openai_server.base_url} transcribed a test recording with "
        "model 'whisper-1'"
    )
    assert "up to 10 s" in lines[5] and "up to 10 s" in lines[9]
    assert lines[6].endswith("serves 'gpt-4o-mini'")
    assert lines[-2].endswith("token valid for @mnemo_test_bot")
    assert lines[-1] == "ok   schedule: nothing waiting"
    assert telegram.token not in result.stdout + result.stderr
    assert list(workspace.iterdir()) == []


def test_warnings_say_what_is_probably_not_meant(tmp_path: Path) -> None:
    typo = tmp_path / "worksapce"
    with FakeOpenAIServer(models=()) as server:
        server.models = None
        result = run_doctor(
            BOT_WORKSPACE=str(typo),
            OPENAI_BASE_URL=server.base_url,
            TELEGRAM_ALLOWED_USERS="",
        )
    assert result.returncode == 0, result.stdout + result.stderr
    found = checks(result)
    assert "no env file found" in found["WARN settings"]
    assert "valid" not in found["WARN settings"]
    assert "serves nobody" in found["WARN allowed users"]
    assert (
        f"{typo} does not exist; `mnemobot run` or `chat` will create it"
        in (found["WARN workspace"])
    )
    assert not typo.exists()
    assert "has no models list" in found["WARN llm"]
    everyone = check_allowed_users(make_settings(typo, telegram_allowed_users="*"))
    assert everyone.line() == (
        "WARN allowed users: TELEGRAM_ALLOWED_USERS is *: the bot serves anyone"
    )


def test_a_fresh_install_and_a_second_allowed_user_read_as_meant(tmp_path: Path) -> None:
    # Right after `mnemobot init`: the default workspace is not there yet, and nothing
    # named it, so there is no typo to warn of. Two allowed users: neither is an operator,
    # and the line says why (adding the second took the first's rights).
    with FakeOpenAIServer() as server:
        result = run_doctor(
            HOME=str(tmp_path),
            OPENAI_BASE_URL=server.base_url,
            TELEGRAM_ALLOWED_USERS="5001,5002",
        )
    found = checks(result)
    default = tmp_path / ".mnemobot" / "workspace"
    assert found["ok   workspace"] == (
        f"{default} will be created by the first `mnemobot run` or `chat`"
    )
    assert found["WARN operators"].startswith(
        "none: TELEGRAM_ALLOWED_USERS names 2 users, so none is an operator by default; "
        "set TELEGRAM_OPERATORS to your user id"
    )
    assert not default.exists()


def test_run_says_at_start_that_several_allowed_users_leave_no_operator(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="mnemobot.bot.cli.startup")
    log_startup(make_settings(tmp_path, telegram_allowed_users="5001"))
    assert "operators" not in caplog.text
    log_startup(make_settings(tmp_path, telegram_allowed_users="5001,5002"))
    assert "operators: none: TELEGRAM_ALLOWED_USERS names 2 users" in caplog.text


def test_failures_are_reported_one_line_each(workspace: Path) -> None:
    (workspace / "preferences").mkdir()
    config = workspace / "preferences" / "runtime-config.json"
    config.write_text('{"llm": {"temperature": 5}}')
    with TelegramServer() as telegram, FakeOpenAIServer(models=["qwen2.5", "llama3"]) as llm:
        result = run_doctor(
            BOT_WORKSPACE=str(workspace),
            OPENAI_BASE_URL=llm.base_url,
            BOT_MODEL="gpt-5",
            TELEGRAM_BOT_TOKEN="999:WRONG-TOKEN",
            TELEGRAM_API_BASE_URL=telegram.base_url,
        )
    assert result.returncode == 1
    found = checks(result)
    assert "llm.temperature" in found["FAIL runtime config"]
    assert "defaults in force" in found["FAIL runtime config"]
    assert found["FAIL llm"].endswith(
        "does not serve 'gpt-5' (BOT_MODEL); it offers: qwen2.5, llama3; "
        "set BOT_MODEL to one of them"
    )
    assert "@BotFather" in found["FAIL telegram"]
    assert "WRONG-TOKEN" not in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_an_unknown_key_warns_and_a_dead_endpoint_fails(workspace: Path) -> None:
    (workspace / "preferences").mkdir()
    config = workspace / "preferences" / "runtime-config.json"
    config.write_text('{"llm": {"temprature": 1, "model": "fake-model"}}')
    result = run_doctor(BOT_WORKSPACE=str(workspace), OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    found = checks(result)
    assert "unknown keys ignored: llm.temprature" in found["WARN runtime config"]
    assert "unavailable" in found["FAIL llm"]
    assert result.returncode == 1


def test_invalid_settings_fail_the_first_check() -> None:
    result = run_doctor(BOT_LOG_LEVEL="chatty")
    assert result.returncode == 1
    assert result.stdout.startswith("FAIL settings: BOT_LOG_LEVEL is invalid")


async def test_a_silent_server_fails_the_check_at_its_time_limit() -> None:
    # Accepts connections (the kernel's backlog) and never answers a byte.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(ProbeError, match=r"did not answer within 0\.5 s"):
            await list_models(f"http://127.0.0.1:{port}/v1", None, "the server", seconds=0.5)
        with pytest.raises(ProbeError, match=r"did not answer within 0\.5 s"):
            await telegram_username(
                "1:SECRET", f"http://127.0.0.1:{port}/bot", "the server", seconds=0.5
            )
        assert time.monotonic() - started < 5


def test_a_home_server_without_speech_to_text_says_what_to_do(workspace: Path) -> None:
    # llama.cpp's llama-server: one model listed, no /v1/audio/transcriptions (404).
    with FakeOpenAIServer(models=["smollm"]) as llama:
        llama.transcriber = lambda upload: error(404, "File Not Found")
        result = run_doctor(
            BOT_WORKSPACE=str(workspace), OPENAI_BASE_URL=llama.base_url, BOT_MODEL="smollm"
        )
        # Chat works: the default transcription server failing is a warning, not a failure.
        assert result.returncode == 0, result.stdout + result.stderr
        detail = checks(result)["WARN speech to text"]
        assert detail.startswith(
            f"{llama.base_url} (the chat model's server) has no speech to text (HTTP 404"
        )
        assert "pip install 'mnemobot[voice]'" in detail
        assert "media.transcription.backend to local" in detail and "docs/media.md" in detail
        assert len(llama.transcriptions) == 1
        assert "Traceback" not in result.stderr and "WARNING" not in result.stderr

        # Named by the operator, a transcription server without it fails the check.
        write_runtime_config(workspace, {"media": {"transcription": {"baseUrl": llama.base_url}}})
        named = run_doctor(
            BOT_WORKSPACE=str(workspace), OPENAI_BASE_URL=llama.base_url, BOT_MODEL="smollm"
        )
        assert named.returncode == 1
        assert (
            "media.transcription.baseUrl) has no speech to text"
            in (checks(named)["FAIL speech to text"])
        )


def test_a_server_that_lists_the_speech_model_is_not_sent_audio(workspace: Path) -> None:
    with FakeOpenAIServer(models=["gpt-4o-mini", "whisper-1"]) as openai_like:
        result = run_doctor(BOT_WORKSPACE=str(workspace), OPENAI_BASE_URL=openai_like.base_url)
        assert checks(result)["ok   speech to text"] == (
            f"{openai_like.base_url} offers 'whisper-1'"
        )
        assert openai_like.transcriptions == []


def test_a_local_model_named_by_size_is_downloaded_by_the_first_note(
    workspace: Path, tmp_path: Path
) -> None:
    pytest.importorskip("faster_whisper")
    write_runtime_config(
        workspace,
        {"media": {"transcription": {"backend": "local", "localModelPath": "tiny.en"}}},
    )
    with FakeOpenAIServer() as server:
        result = run_doctor(
            BOT_WORKSPACE=str(workspace),
            OPENAI_BASE_URL=server.base_url,
            HF_HOME=str(tmp_path / "hf"),
            HF_HUB_OFFLINE="1",
        )
    assert (
        "model 'tiny.en' is not downloaded yet: the first voice note downloads it"
        in (checks(result)["WARN speech to text"])
    )
    # Named ".en": English only, said before it is downloaded.
    assert checks(result)["WARN speech to text"].endswith("It hears English only.")
