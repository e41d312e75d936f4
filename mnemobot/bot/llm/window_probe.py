"""Asking a model server for the context window it runs a model with.

Each kind of server says it in its own place (see `window_reports`); they are asked in
turn, each question within PROBE_TIMEOUT_SECONDS, until one states a window. A server that
cannot be reached at all is not asked further: the caller asks again later.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import openai

from mnemobot.bot.llm.window_reports import (
    server_root,
    window_in_lmstudio_models,
    window_in_models_list,
    window_in_ollama_ps,
    window_in_ollama_show,
    window_in_props,
)
from mnemobot.model.windows import ModelWindow

# Each question is answered within this or given up; a turn waits for the answers at most
# this long too (the asking goes on behind it).
PROBE_TIMEOUT_SECONDS = 5.0


async def ask_server_for_window(
    client: openai.AsyncOpenAI, model: str
) -> tuple[ModelWindow | None, bool]:
    """(the window the server states for `model`, whether the server answered at all)."""
    options: Any = {"timeout": PROBE_TIMEOUT_SECONDS, "max_retries": 0}
    root = server_root(str(client.base_url))

    def get(path: str) -> Awaitable[object]:
        return client.get(path, cast_to=object, options=options)

    # vLLM (and hosted lists), llama.cpp, LM Studio, Ollama's loaded model, Ollama's model
    # card: the first that states a window wins.
    questions: tuple[tuple[Callable[[], Awaitable[object]], Callable[[object], Any]], ...] = (
        (lambda: get("/models"), lambda document: window_in_models_list(document, model)),
        (lambda: get(f"{root}/props"), window_in_props),
        (
            lambda: get(f"{root}/api/v0/models"),
            lambda document: window_in_lmstudio_models(document, model),
        ),
        (lambda: get(f"{root}/api/ps"), lambda document: window_in_ollama_ps(document, model)),
        (
            lambda: client.post(
                f"{root}/api/show", cast_to=object, body={"model": model}, options=options
            ),
            window_in_ollama_show,
        ),
    )
    reached = False
    for ask, read in questions:
        try:
            document = await ask()
        except (openai.APIConnectionError, openai.APITimeoutError):
            return None, reached
        except Exception:  # an error status, or a body that is no JSON document
            reached = True  # not this kind of server
            continue
        reached = True
        if (window := read(document)) is not None:
            return window, True
    return None, reached
