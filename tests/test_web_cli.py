"""`mnemobot web` and `mnemobot run --web` as a person runs them: where the page listens,
the token it prints, one clear line for a bad token, and a forget from the page the bot
serves reaching the bot's very next reply."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, system_text, user_texts
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import run_mnemobot, subprocess_env
from tests.telegram_harness import telegram
from tests.test_web_page import write_items
from tests.web_harness import files_with, visible_text

__all__ = ["telegram"]  # fixtures used by name below

USER = 4242
SECRET = "QX-7731-ZEBRA"
ADDRESS = re.compile(r"memory page at (http://127\.0\.0\.1:\d+/)(\?token=(\S+))?")


@contextmanager
def running(
    args: list[str], env: dict[str, str], cwd: Path
) -> Iterator[tuple[subprocess.Popen[str], queue.Queue[str]]]:
    """`python -m mnemobot ARGS`, its stdout lines in a queue; stopped (SIGINT) at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemobot", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    reader = threading.Thread(
        target=lambda: [lines.put(line) for line in process.stdout], daemon=True
    )  # type: ignore[union-attr]
    reader.start()
    try:
        yield process, lines
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def address_of(lines: queue.Queue[str], process: subprocess.Popen[str]) -> re.Match[str]:
    while True:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            process.kill()
            raise AssertionError(
                f"no address printed; stderr: {process.communicate()[1]}"
            ) from None
        found = ADDRESS.search(line)
        if found:
            return found


def test_mnemobot_web_listens_on_this_machine_behind_the_token_it_prints(workspace: Path) -> None:
    write_items(workspace, "console:local", 5, start=1_750_000_000.0)
    env = subprocess_env(BOT_WORKSPACE=str(workspace))
    with running(["web", "--port", "0"], env, workspace.parent) as (process, lines):
        found = address_of(lines, process)
        base, token = found.group(1), found.group(3)
        assert token and len(token) >= 32
        assert lines.get(timeout=30).rstrip().endswith("; Ctrl-C stops it")
        with httpx.Client(timeout=30) as browser:
            assert browser.get(base).status_code == 401
            opened = browser.get(f"{base}?token={token}", follow_redirects=True)
            assert opened.status_code == 200
            assert "console:local" in visible_text(opened.text)
            assert browser.get(f"{base}chat/console:local/items").status_code == 200
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert token not in err and "Traceback" not in err


def test_the_env_files_access_token_is_the_pages_token(workspace: Path) -> None:
    token = "file-page-token-0123456789"
    write_items(workspace, "console:local", 2, start=1_750_000_000.0)
    env_file = workspace.parent / "bot.env"
    env_file.write_text(f"BOT_WORKSPACE={workspace}\nMNEMOBOT_WEB_TOKEN={token}\n")
    env = subprocess_env()
    args = ["--env-file", str(env_file), "web", "--port", "0"]
    with running(args, env, workspace.parent) as (process, lines):
        found = address_of(lines, process)
        # The file's token is the page's: none is made, so none is printed.
        assert found.group(3) is None
        assert "MNEMOBOT_WEB_TOKEN" in lines.get(timeout=30)
        with httpx.Client(base_url=found.group(1), timeout=30) as page:
            assert page.get("/").status_code == 401
            opened = page.get("/", headers={"Authorization": f"Bearer {token}"})
            assert opened.status_code == 200
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert token not in out and token not in err


def test_an_unusable_access_token_in_the_env_file_is_one_clear_line(workspace: Path) -> None:
    env_file = workspace.parent / "bot.env"
    env_file.write_text(f"BOT_WORKSPACE={workspace}\nMNEMOBOT_WEB_TOKEN=tiny9q\n")
    result = run_mnemobot("--env-file", str(env_file), "web")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("mnemobot: MNEMOBOT_WEB_TOKEN") and "tiny9q" not in line


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("MNEMOBOT_WEB_TOKENS", "anna", "each entry is NAME:TOKEN"),
        ("MNEMOBOT_WEB_TOKENS", "anna:tiny9q", "shorter than 16 characters"),
        ("MNEMOBOT_WEB_TOKEN", "tiny9q", "MNEMOBOT_WEB_TOKEN: the token of operator is shorter"),
        ("MNEMOBOT_WEB_TOKENS", "a:0123456789abcdefgh,a:abcdefgh0123456789", "given twice"),
    ],
)
def test_an_unusable_access_token_is_one_clear_line(
    workspace: Path, variable: str, value: str, says: str
) -> None:
    result = run_mnemobot("web", BOT_WORKSPACE=str(workspace), **{variable: value})
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"mnemobot: {variable}") and says in line
    for secret in ("tiny9q", "0123456789abcdefgh", "abcdefgh0123456789"):
        assert secret not in line


@pytest.mark.slow
def test_a_forget_on_the_page_run_web_serves_reaches_the_bots_next_reply(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    token = "anna-page-token-0123456789"
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test-secret-value",
        OPENAI_BASE_URL=openai_server.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_ALLOWED_USERS=str(USER),
        MNEMOBOT_WEB_TOKENS=f"anna:{token}",
    )
    with running(["run", "--web", "0"], env, workspace.parent) as (process, lines):
        base = address_of(lines, process).group(1)
        # Ctrl-C stops the page and the bot with it: the start line says so (it said "it").
        assert lines.get(timeout=30).rstrip().endswith("; Ctrl-C stops it and the bot")
        telegram.send_text(f"My locker code is {SECRET}.", chat_id=USER)
        telegram.wait_for_messages(USER, 1, timeout=30)
        scope = f"telegram:{USER}"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as page:
            listed = page.get(f"/chat/{scope}/items", params={"q": "locker code"}).text
            item_id = re.findall(r'id="item-([0-9a-f]+)"', listed)[0]
            path = f"/chat/{scope}/forget/{item_id}"
            csrf = re.search(r'name="csrf" value="(\w+)"', page.get(path).text).group(1)  # type: ignore[union-attr]
            done = page.post(path, data={"csrf": csrf, "confirm": "yes"})
            assert done.status_code == 200 and "Hidden now" in done.text
        telegram.send_text("What is my locker code?", chat_id=USER)
        telegram.wait_for_messages(USER, 2, timeout=30)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)

    assert process.returncode == 0, err
    # The bot's next request held the code nowhere: not in memory, not in the conversation.
    request = openai_server.requests[-1]
    assert SECRET not in system_text(request) and SECRET not in " ".join(user_texts(request))
    # Every file of the chat's memory and conversation (the delivery journals keep a
    # message until its reply is out and drop it at their next rewrite, as they do for a
    # forget by the memory tool; /forget_me erases them too).
    assert [
        path for path in files_with(workspace, SECRET) if not path.startswith("delivery/")
    ] == []
    # The correction is in the log, by whom and what; never the text, never the token.
    assert f"web correction by anna: forgot item {item_id} of {scope}" in err
    assert token not in err and SECRET not in err
