"""`mnemobot doctor`'s check of memory.embeddings: configured ones answer, or an offer.

On: one question is embedded through the bot's own client (the settings, key and marking
it will use) and the vector's length and the time it took are shown. Off: the chat
model's server is asked for its models, and one that looks like an embedding model
("embed", "e5", "bge", "gte", "minilm", "nomic" in its name) is offered with the settings
that would turn it on.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Literal

from mnemobot.bot.cli.logging_setup import redact
from mnemobot.bot.cli.probes import NETWORK_CHECK_SECONDS, ProbeError, list_models
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.bot.turn.commands import endpoint_for_display
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.settings import Settings

_EMBEDDING_MODEL_NAME = re.compile(r"embed|e5|bge|gte|minilm|nomic", re.IGNORECASE)

Emit = Callable[[str], None]
Status = Literal["ok", "warn", "fail"]


def embedding_models(names: list[str]) -> list[str]:
    """The names among `names` that look like embedding models."""
    return [name for name in names if _EMBEDDING_MODEL_NAME.search(name)]


def offered_settings(model: str) -> dict[str, object]:
    """The memory.embeddings keys that turn recall by meaning on with `model` of the chat
    model's server (baseUrl null: the same server, the same key)."""
    return {"enabled": True, "model": model}


async def check_embeddings(
    settings: Settings, store: RuntimeConfigStore, emit: Emit, *, offer: bool
) -> tuple[Status, str]:
    """(status "ok" / "warn" / "fail", detail) of memory.embeddings; `offer`: when they
    are off, ask the chat model's server for an embedding model to suggest."""
    config = store.current().memory.embeddings
    if config.identity() is None:
        return await _offer(settings, emit) if offer else ("ok", "off (memory.embeddings.enabled)")
    where = endpoint_for_display(config.base_url or settings.openai_base_url or "OpenAI")
    emit(f"...  embeddings: embedding a question at {where} (up to {NETWORK_CHECK_SECONDS:g} s)")
    model = OpenAIEmbeddings(settings, store)
    started = time.perf_counter()
    try:
        vector = await asyncio.wait_for(
            model.embed_query("Which city does my sister live in?"), NETWORK_CHECK_SECONDS
        )
    except TimeoutError:
        return "fail", f"{where} did not embed a question within {NETWORK_CHECK_SECONDS:g} s"
    except Exception as exc:  # the server's refusal, in one line
        keys = [
            s.get_secret_value()
            for s in (settings.bot_embeddings_api_key, settings.openai_api_key)
            if s
        ]
        detail = redact(str(exc), keys)[:160]
        return (
            "fail",
            f"{where} could not embed with {config.model!r}: {type(exc).__name__}: {detail}",
        )
    finally:
        await model.aclose()
    took = (time.perf_counter() - started) * 1000
    timeout = config.query_timeout_seconds * 1000
    slow = took > timeout / 2
    note = (
        f"; that is close to memory.embeddings.queryTimeoutSeconds ({timeout:g} ms): a slower "
        "question goes without recall by meaning"
        if slow
        else ""
    )
    return (
        "warn" if slow else "ok",
        f"{where} embeds with {config.model!r}: {vector.shape[-1]} dimensions, {took:.0f} ms{note}",
    )


async def _offer(settings: Settings, emit: Emit) -> tuple[Status, str]:
    where = endpoint_for_display(settings.openai_base_url or "https://api.openai.com/v1")
    emit(f"...  embeddings: off; asking {where} for embedding models")
    api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    try:
        listed = await list_models(settings.openai_base_url, api_key, where)
    except ProbeError:
        return "ok", "off (memory.embeddings.enabled)"
    found = embedding_models(listed.models or [])
    if not found:
        return "ok", "off (memory.embeddings.enabled)"
    return (
        "ok",
        f"off; {where} serves {found[0]!r}: set memory.embeddings "
        f"{json.dumps(offered_settings(found[0]))} in the runtime config for recall by "
        "meaning (see docs/embeddings.md)",
    )
