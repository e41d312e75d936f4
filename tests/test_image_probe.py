"""The sound image of our own (`image_probe`) a model is shown when its server refuses an
image: one at a time for every chat refused meanwhile, not again soon after one that got
no verdict, sent with the operator's sampling, and the server's words about a refused
image logged without the image. The real PTB Application against the fake Bot API and the
fake model server over HTTP."""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemobot.bot.llm.errors import server_detail
from mnemobot.bot.llm.image_probe import INCONCLUSIVE_PROBE_COOLDOWN_SECONDS
from mnemobot_tooling.fakes.openai_server import (
    FakeOpenAIServer,
    Step,
    echo_responder,
    error,
    gated,
    hang,
    reply,
)
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.mcp_harness import wait_until
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 5151
OTHER = 5152
# Bytes sent as scan.jpg that are no image: the server cannot decode them (a 400).
NO_IMAGE = bytes(range(256)) * 8
BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
# What a base64 run is made of in a server's words: JSON may escape its "/" as "\/".
RUN_CHARS = BASE64 + "\\"


def is_probe(request: dict[str, object]) -> bool:
    return "What colour is this image" in json.dumps(request)


def probes(server: FakeOpenAIServer) -> list[dict[str, object]]:
    return [r for r in server.requests if is_probe(r)]


def send_scan(telegram: TelegramServer, chat: int) -> None:
    telegram.send_document(
        chat_id=chat,
        file_name="scan.jpg",
        mime_type="image/jpeg",
        content=NO_IMAGE,
        caption="what does this scan say?",
    )


class SettableClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_chats_refused_at_once_wait_for_one_sound_image(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Two chats' images refused while our image is out: the second waits for its verdict,
    # where it used to show the model one of its own.
    caplog.set_level(logging.DEBUG, logger="mnemobot.bot.llm.image_probe")
    answer_probe = threading.Event()

    def answer(request: dict[str, object]) -> Step:
        if is_probe(request):
            return gated(answer_probe, reply("White"))
        return echo_responder(request)

    openai_server.decodes_images = True
    openai_server.responder = answer  # type: ignore[assignment]
    # No gate: a hosted API takes both chats' requests at once.
    await start_bot(runtime={"llm": {"serverSlots": 0}})
    send_scan(telegram, USER)
    send_scan(telegram, OTHER)

    def waiting() -> bool:
        return any("already shown" in r.getMessage() for r in caplog.records)

    await wait_until(waiting, 20, "the second refused chat waiting for the probe")
    answer_probe.set()
    for chat in (USER, OTHER):
        [answered] = await telegram.wait_for_messages_async(chat, 1, timeout=20)
        assert "what does this scan say?" in answered["plain_text"]
        assert "could not be looked at" in answered["plain_text"]
    assert len(probes(openai_server)) == 1


async def test_a_probe_without_verdict_is_not_repeated_until_its_cooldown_ends(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # A slow home server: each probe it cannot answer in time costs the refused chat the
    # whole timeout, so one that got no verdict is not repeated for a while.
    stalled = True

    def answer(request: dict[str, object]) -> Step:
        if is_probe(request):
            return hang() if stalled else reply("White")
        return echo_responder(request)

    openai_server.decodes_images = True
    openai_server.responder = answer  # type: ignore[assignment]
    clock = SettableClock(time.time())
    # The probe takes no longer than any call may (llm.requestTimeoutSeconds).
    await start_bot(clock=clock, runtime={"llm": {"requestTimeoutSeconds": 3}})
    send_scan(telegram, USER)
    [first] = await telegram.wait_for_messages_async(USER, 1, timeout=20)
    assert "what does this scan say?" in first["plain_text"]
    assert len(probes(openai_server)) == 1

    send_scan(telegram, USER)
    [_, second] = await telegram.wait_for_messages_async(USER, 2, timeout=20)
    assert "what does this scan say?" in second["plain_text"]
    assert len(probes(openai_server)) == 1

    stalled = False
    clock.now += INCONCLUSIVE_PROBE_COOLDOWN_SECONDS + 1
    send_scan(telegram, USER)
    third = (await telegram.wait_for_messages_async(USER, 3, timeout=20))[2]
    assert len(probes(openai_server)) == 2
    assert "could not be looked at" in third["plain_text"]


async def test_the_probe_is_sent_with_the_configured_temperature(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    openai_server.decodes_images = True
    await start_bot(runtime={"llm": {"temperature": 0.9}})
    send_scan(telegram, USER)
    await telegram.wait_for_messages_async(USER, 1, timeout=20)
    [probe] = probes(openai_server)
    assert probe["temperature"] == 0.9


async def test_a_server_that_echoes_the_refused_image_never_puts_it_in_the_log(
    start_bot: StartBot,
    telegram: TelegramServer,
    openai_server: FakeOpenAIServer,
    workspace: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    picture = b"\xff\xd8\xff\xe0" + bytes(range(7, 250)) * 3

    def answer(request: dict[str, object]) -> Step:
        url = _image_url(request)
        if url is not None:
            # A text-only model's server that quotes what it could not take.
            return error(400, f"unsupported content part: {{'image_url': '{url[:400]}'}}")
        return echo_responder(request)

    openai_server.responder = answer  # type: ignore[assignment]
    await start_bot()
    telegram.send_photo(chat_id=USER, caption="is this mould?", content=picture)
    [answered] = await telegram.wait_for_messages_async(USER, 1, timeout=20)
    assert "is this mould?" in answered["plain_text"]

    payload = base64.b64encode(picture).decode()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "refused an image" in logged
    assert "data:image/jpeg;base64,[base64]" in logged
    assert payload[4:24] not in logged
    kept = (workspace / "preferences" / "model-vision.json").read_text()
    assert payload[4:24] not in kept


def _image_url(request: dict[str, object]) -> str | None:
    for message in request.get("messages") or []:  # type: ignore[attr-defined]
        for part in message.get("content") if isinstance(message.get("content"), list) else []:
            if part.get("type") == "image_url":
                return str(part["image_url"]["url"])
    return None


_BASE64_RUNS = st.text(alphabet=BASE64, min_size=1, max_size=400)
_PROSE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from(" \n\t"), max_size=200
)


@given(_PROSE, _BASE64_RUNS, _PROSE, st.integers(10, 400))
def test_a_server_detail_keeps_no_image_and_stays_short(
    before: str, payload: str, after: str, limit: int
) -> None:
    for echoed in (
        f"{before}data:image/png;base64,{payload}",  # cut in the payload
        f"{before}'data:image/webp;base64,{payload}' {after}",
        f"{before} {payload * 3} {after}",  # a bare base64 run
    ):
        detail = server_detail(echoed, limit)
        assert len(detail) <= limit
        assert "\n" not in detail
        assert not any(len(run) >= 40 for run in _runs(detail))
        # A payload's place says only that it was there, even where the limit cuts it.
        assert re.search(r"base64,[^\[]", detail, re.IGNORECASE) is None


def _runs(text: str) -> list[str]:
    runs, run = [], ""
    for char in text:
        if char in RUN_CHARS:
            run += char
        else:
            runs.append(run)
            run = ""
    return [*runs, run]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_a_server_detail_without_base64_is_its_words_on_one_line(text: str) -> None:
    words = " ".join(text.split())
    if any(len(run) >= 40 for run in _runs(words)) or "base64," in words.lower():
        return
    assert server_detail(text, 300) == words[:300]
