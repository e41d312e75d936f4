"""Hostile files are normal input: PDFs made to hurt a reader (made here by
`mnemobot_tooling.hostile_pdf`), sent through the fake Bot API to the real PTB Application,
read within their time and memory budgets in reader processes. Each gets
one line, the rest of its turn is answered, other chats never wait on it, a restart does
not read it again, and SIGTERM stops the bot whatever a reader is doing."""

from __future__ import annotations

import asyncio
import functools
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemobot.bot.media.document_reader import ReaderLimits
from mnemobot.bot.tuning import Tuning
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, gated, reply, user_texts
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.hostile_pdf import decompression_bomb, deeply_nested, shared_stream
from tests.conftest import subprocess_env
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 4242
SCOPE = f"telegram:{USER}"
# Small budgets keep the tests fast; the slow PDF would take pypdf minutes.
FAST_READER = Tuning(reader=ReaderLimits(seconds=2))


@functools.cache
def slow_pdf() -> bytes:
    """30 pages sharing 1 MB of text operators: about 6 s of pypdf per page."""
    return shared_stream(pages=30, content_bytes=1_000_000)


def greedy_pdf() -> bytes:
    """Two pages sharing 20 MB of text operators: pypdf needs far more than 200 MB."""
    return shared_stream(pages=2, content_bytes=20_000_000)


bomb = functools.cache(decompression_bomb)
# These fail by themselves, well within the default budget.
DEFAULT_READER = Tuning()
SMALL_MEMORY = Tuning(reader=ReaderLimits(seconds=30, memory_mb=200))
HOSTILE: dict[str, tuple[Callable[[], bytes], str, Tuning]] = {
    "nested": (deeply_nested, "nests its contents too deeply", DEFAULT_READER),
    "bomb": (bomb, "unpacks to more data than a document may hold", DEFAULT_READER),
    "slow": (slow_pdf, "took longer than 2 s", FAST_READER),
    "greedy": (greedy_pdf, "needed more than 200 MB", SMALL_MEMORY),
}


def send_pdf(telegram: TelegramServer, chat_id: int, content: bytes, caption: str | None) -> None:
    telegram.send_document(
        chat_id=chat_id,
        file_name="report.pdf",
        mime_type="application/pdf",
        content=content,
        caption=caption,
    )


async def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_a_hostile_pdf_gets_one_line_and_the_rest_of_its_turn_is_answered(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, kind: str
) -> None:
    make, reason, budget = HOSTILE[kind]
    release = threading.Event()
    openai_server.script(gated(release, reply("first answer")))
    await start_bot(tuning=budget)
    try:
        telegram.send_text("hello", chat_id=USER)
        await openai_server.wait_for_requests_async(1)
        # Sent while the reply is being written: one turn, the PDF and a line after it.
        send_pdf(telegram, USER, make(), "what does it say?")
        telegram.send_text("and remind me what we said", chat_id=USER)
        await wait_until(lambda: not telegram.pending_updates(), 10, "both kept by the bot")
    finally:
        release.set()
    sent = await telegram.wait_for_messages_async(USER, 3, timeout=30)

    texts = [m["plain_text"] for m in sent]
    [line] = [t for t in texts if t.startswith("I kept report.pdf")]
    assert "could not read it" in line
    assert reason in line
    assert "Traceback" not in "\n".join(texts)
    said = user_texts(openai_server.last_request())[-1]
    assert "what does it say?" in said and "and remind me what we said" in said
    assert texts[-1].startswith("echo: ")


async def test_a_pdf_sent_alone_with_a_caption_gets_a_reply(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot()
    send_pdf(telegram, USER, bomb(), "summarize this")
    sent = await telegram.wait_for_messages_async(USER, 2, timeout=30)

    assert "could not read it" in sent[0]["plain_text"]
    assert (
        sent[1]["plain_text"]
        == "echo: [file received/1-report.pdf kept, unreadable] summarize this"
    )
    assert (workspace / "files" / SCOPE / "received" / "1-report.pdf").exists()


async def test_a_file_nobody_could_read_sent_without_a_caption_asks_the_model_nothing(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    # Found live: the line said all there was, then a second reply to "[file ... kept,
    # unreadable]" followed, from a model with nothing to answer.
    await start_bot()
    send_pdf(telegram, USER, b"%PDF-1.7\n" + bytes(range(256)) * 12, None)
    [line] = await telegram.wait_for_messages_async(USER, 1, timeout=30)
    assert line["plain_text"].startswith("I kept report.pdf")
    assert "could not read it" in line["plain_text"]
    telegram.send_document(
        chat_id=USER,
        file_name="notes.docx",
        mime_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        content=b"PK\x03\x04 docx",
    )
    [_, unsupported] = await telegram.wait_for_messages_async(USER, 2, timeout=30)
    assert "I can only read text files and PDFs" in unsupported["plain_text"]
    # Still answered as usual, and the model was asked about neither file.
    telegram.send_text("hello", chat_id=USER)
    sent = await telegram.wait_for_messages_async(USER, 3, timeout=30)
    assert sent[-1]["plain_text"] == "echo: hello"
    said = [text for request in openai_server.requests for text in user_texts(request)]
    assert "hello" in said[-1]
    assert not [text for text in said if "report.pdf" in text or "notes.docx" in text]
    assert (workspace / "files" / SCOPE / "received" / "1-report.pdf").exists()


async def test_a_file_nobody_could_read_beside_a_question_is_named_to_the_model(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # Without a caption, but in one turn with a question about it: the model must know a
    # file came, or it denies the file the bot just said it kept.
    release = threading.Event()
    openai_server.script(gated(release, reply("first answer")))
    await start_bot()
    try:
        telegram.send_text("hello", chat_id=USER)
        await openai_server.wait_for_requests_async(1)
        send_pdf(telegram, USER, b"%PDF-1.7\n" + bytes(range(256)) * 12, None)
        telegram.send_text("what do you make of the file?", chat_id=USER)
        await wait_until(lambda: not telegram.pending_updates(), 10, "both kept by the bot")
    finally:
        release.set()
    sent = await telegram.wait_for_messages_async(USER, 3, timeout=30)
    assert any(m["plain_text"].startswith("I kept report.pdf") for m in sent)
    said = user_texts(openai_server.last_request())[-1]
    assert "report.pdf kept, unreadable]" in said
    assert "what do you make of the file?" in said


@pytest.mark.slow
async def test_status_answers_at_once_while_eight_chats_send_hostile_pdfs(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    await start_bot(tuning=FAST_READER)
    chats = [5000 + n for n in range(8)]
    for chat in chats:
        send_pdf(telegram, chat, slow_pdf(), None)
    received = [workspace / "files" / f"telegram:{chat}" / "received" for chat in chats]
    # More documents being read than the default thread pool has workers (6 on 2 cores).
    await wait_until(lambda: sum(folder.is_dir() for folder in received) >= 6, 30, "the PDFs kept")
    started = time.monotonic()
    telegram.send_text("/status", chat_id=6000)
    [status] = await telegram.wait_for_messages_async(6000, 1, timeout=5)
    assert "Model" in status["plain_text"] or status["plain_text"]
    assert time.monotonic() - started < 5

    # Two readers at a time, 2 s each: every chat gets its line within seconds.
    for chat in chats:
        line = (await telegram.wait_for_messages_async(chat, 1, timeout=60))[0]
        assert "took longer than 2 s" in line["plain_text"]


async def test_a_pdf_that_blew_its_budget_is_not_read_again_after_a_restart(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    release = threading.Event()
    openai_server.script(gated(release, reply("never delivered")))
    bot = await start_bot(tuning=FAST_READER)
    try:
        send_pdf(telegram, USER, slow_pdf(), "what does it say?")
        # Read (past its budget), its line shown, then the model is asked: the bot stops
        # before the turn ends, so the message is still waiting in the inbox.
        await openai_server.wait_for_requests_async(1, timeout=30)
        [first] = telegram.sent_messages(USER)
        assert "took longer than 2 s" in first["plain_text"]
        await bot.shutdown()
    finally:
        release.set()
    kept = workspace / "files" / SCOPE / "received" / "1-report.pdf"
    assert kept.with_name("1-report.pdf.overrun.json").exists()

    await start_bot(tuning=FAST_READER)
    sent = await telegram.wait_for_messages_async(USER, 3, timeout=30)

    again = sent[1]["plain_text"]
    assert "took longer than 2 s before, so I did not read it again" in again
    assert sent[2]["plain_text"].endswith("unreadable] what does it say?")


def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.slow
def test_sigterm_stops_the_bot_within_its_grace_while_a_pdf_is_read(
    workspace: Path, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # The bot's budget (60 s) is longer than the test: the reader is mid-read when SIGTERM
    # comes (the slow PDF takes pypdf minutes).
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=openai_server.base_url,
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_ALLOWED_USERS=str(USER),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemobot", "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workspace.parent,
    )
    try:
        telegram.wait_for_call("getUpdates", timeout=30)
        send_pdf(telegram, USER, slow_pdf(), "what does it say?")
        kept = workspace / "files" / SCOPE / "received" / "1-report.pdf"
        deadline = time.monotonic() + 30
        while not kept.exists():
            assert time.monotonic() < deadline, "the PDF was not kept"
            time.sleep(0.05)
        readers = children_of(process.pid)
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        # The turn gets the bot's 10 s of grace, then its reader is killed.
        _, err = process.communicate(timeout=10 + 15)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 0, err
    assert took < 10 + 15
    assert "Traceback" not in err
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in readers):
        assert time.monotonic() < deadline, "a reader process outlived the bot"
        time.sleep(0.05)
