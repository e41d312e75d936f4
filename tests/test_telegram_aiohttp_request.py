"""The aiohttp backend for PTB: real HTTP on 127.0.0.1, PTB's error contract."""

from __future__ import annotations

import socket

import pytest
from aiohttp import web
from telegram import Bot
from telegram.error import NetworkError

from mnemobot.bot.channels.telegram.aiohttp_request import AiohttpRequest

TOKEN = "123:ABC"


async def test_bot_calls_round_trip_with_form_fields(unused_tcp_port: int) -> None:
    seen: list[dict[str, str]] = []

    async def send_message(request: web.Request) -> web.Response:
        seen.append(dict(await request.post()))
        message = {
            "message_id": 7,
            "date": 0,
            "chat": {"id": 42, "type": "private"},
            "text": seen[-1]["text"],
        }
        return web.json_response({"ok": True, "result": message})

    async def get_me(request: web.Request) -> web.Response:
        me = {"id": 123, "is_bot": True, "first_name": "T", "username": "t_bot"}
        return web.json_response({"ok": True, "result": me})

    app = web.Application()
    app.router.add_post(f"/bot{TOKEN}/getMe", get_me)
    app.router.add_post(f"/bot{TOKEN}/sendMessage", send_message)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port).start()
    try:
        bot = Bot(
            TOKEN, base_url=f"http://127.0.0.1:{unused_tcp_port}/bot", request=AiohttpRequest()
        )
        async with bot:
            sent = await bot.send_message(chat_id=42, text="héllo <b>", parse_mode="HTML")
        assert sent.message_id == 7 and sent.text == "héllo <b>"
        assert seen[0]["chat_id"] == "42" and seen[0]["parse_mode"] == "HTML"
    finally:
        await runner.cleanup()


async def test_an_unreachable_server_is_a_network_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    request = AiohttpRequest()
    await request.initialize()
    try:
        with pytest.raises(NetworkError):
            await request.post(f"http://127.0.0.1:{port}/bot{TOKEN}/getMe")
    finally:
        await request.shutdown()
