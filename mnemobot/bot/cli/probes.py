"""One-shot network checks shared by `mnemobot doctor` and `mnemobot init`.

Each waits at most NETWORK_CHECK_SECONDS and turns every failure into one line with no
secret in it (a Telegram URL carries the bot token, so error texts are redacted).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import telegram
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from mnemobot.bot.cli.logging_setup import redact
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.systems.core.llm import LLMError

# A person is waiting at the terminal; a healthy server answers in well under a second.
NETWORK_CHECK_SECONDS = 10.0
# Status codes of a server that has no models list (llama.cpp builds, some proxies).
_NO_MODELS_LIST = frozenset({404, 405, 501})


class ProbeError(Exception):
    """The check failed; the message is one secret-free line saying what and how to fix."""


@dataclass(frozen=True, slots=True)
class ModelsList:
    # None when the server has no models list, so which models it serves is unknown.
    models: list[str] | None

    def serves(self, model: str) -> bool | None:
        return None if self.models is None else model in self.models

    def describe(self, limit: int = 10) -> str:
        names = self.models or []
        more = f" (+{len(names) - limit} more)" if len(names) > limit else ""
        return ", ".join(names[:limit]) + more if names else "no models"


async def list_models(
    base_url: str | None, api_key: str | None, where: str, seconds: float = NETWORK_CHECK_SECONDS
) -> ModelsList:
    """`GET /models` of an OpenAI-compatible server."""
    # The clients' own timeouts are a margin longer, so the overall limit always ends the
    # wait first and says so in one way.
    llm = OpenAIChatModel(
        api_key=api_key, base_url=base_url, max_retries=0, timeout_seconds=seconds + 1
    )
    try:
        async with asyncio.timeout(seconds):
            return ModelsList(await llm.list_models())
    except TimeoutError:
        raise ProbeError(f"{where} did not answer within {seconds:g} s") from None
    except LLMError as error:
        if error.status in _NO_MODELS_LIST:
            return ModelsList(None)
        raise ProbeError(
            f"{where}: {error.user_text()} ({redact(error.detail, [api_key])[:120]})"
        ) from None
    except Exception as exc:
        # Anything else the client refuses (a malformed URL...): one line, no traceback.
        raise ProbeError(f"{where} cannot be asked ({type(exc).__name__})") from None
    finally:
        await llm.close()


async def telegram_username(
    token: str, base_url: str, where: str, seconds: float = NETWORK_CHECK_SECONDS
) -> str:
    """The bot's @username from getMe: proves the token and the Bot API endpoint."""
    client_seconds = seconds + 1  # see list_models
    request = HTTPXRequest(
        connection_pool_size=1,
        connect_timeout=client_seconds,
        read_timeout=client_seconds,
        write_timeout=client_seconds,
        pool_timeout=client_seconds,
    )
    bot = telegram.Bot(token, base_url=base_url, request=request)
    try:
        async with asyncio.timeout(seconds):
            me = await bot.get_me()
    except InvalidToken:
        raise ProbeError(
            f"{where} rejected TELEGRAM_BOT_TOKEN; copy it again from @BotFather "
            "(https://t.me/BotFather)"
        ) from None
    except TimeoutError:
        raise ProbeError(f"{where} did not answer within {seconds:g} s") from None
    except TelegramError as exc:
        raise ProbeError(f"Bot API at {where} unreachable: {redact(str(exc), [token])}") from None
    finally:
        await request.shutdown()
    # Every bot has a username; its id names it should a server leave it out.
    return me.username or str(me.id)
