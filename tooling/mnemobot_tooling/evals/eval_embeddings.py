"""The embedding model of an eval or bench run: the bot's own client, optionally cached.

`memory.embeddings` of the run's `--memory` settings names the server, as in a bot's
runtime config; its key comes from BOT_EMBEDDINGS_API_KEY (or OPENAI_API_KEY for the chat
model's server), as in the bot. `--embedding-cache FILE` keeps every vector the server
returned (by model, query or passage, and text) so the next run with the same texts asks
the server nothing: the vectors are the server's own, only the waiting is saved. Timing
figures never come from a cached run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.bot.llm.embeddings import OpenAIEmbeddings
from mnemobot.config.runtime import EmbeddingsConfig, MemoryConfig, RuntimeConfig
from mnemobot.config.settings import Settings


class FixedRuntime:
    """A runtime config that never changes (what `OpenAIEmbeddings` reads it through)."""

    def __init__(self, memory: MemoryConfig) -> None:
        self._config = RuntimeConfig().model_copy(update={"memory": memory})

    def current(self) -> RuntimeConfig:
        return self._config


class CachedEmbeddings:
    """`memory.store.item_vectors.EmbeddingModel` over another, remembering every vector."""

    def __init__(self, inner: OpenAIEmbeddings, path: Path | None) -> None:
        self.inner = inner
        self.path = path
        self._vectors: dict[str, list[float]] = {}
        self.asked = 0
        if path is not None and path.is_file():
            self._vectors = orjson.loads(path.read_bytes())

    def config(self) -> EmbeddingsConfig:
        return self.inner.config()

    def _key(self, kind: str, text: str) -> str:
        return f"{self.config().identity()}\x1f{kind}\x1f{text}"

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key("passage", text) for text in texts]
        missing = [i for i, key in enumerate(keys) if key not in self._vectors]
        if missing:
            fresh = self.inner.embed_passages([texts[i] for i in missing])
            self.asked += len(missing)
            for row, i in enumerate(missing):
                self._vectors[keys[i]] = fresh[row].tolist()
        return np.asarray([self._vectors[key] for key in keys], dtype=np.float32)

    async def embed_query(self, text: str) -> np.ndarray:
        key = self._key("query", text)
        if key not in self._vectors:
            self._vectors[key] = (await self.inner.embed_query(text)).tolist()
            self.asked += 1
        return np.asarray(self._vectors[key], dtype=np.float32)

    def close(self) -> None:
        self.inner.close()

    def save(self) -> None:
        if self.path is not None and self.asked:
            write_atomic(self.path, orjson.dumps(self._vectors))

    async def aclose(self) -> None:
        await self.inner.aclose()


def eval_embedder(memory: MemoryConfig, cache: Path | None) -> CachedEmbeddings | None:
    """The embedding model `memory.embeddings` names, or None when they are off."""
    if memory.embeddings.identity() is None:
        return None
    settings = Settings(
        _env_file=None,
        openai_api_key=os.environ.get("OPENAI_API_KEY") or None,
        openai_base_url=os.environ.get("OPENAI_BASE_URL") or None,
        bot_embeddings_api_key=os.environ.get("BOT_EMBEDDINGS_API_KEY") or None,
    )
    inner = OpenAIEmbeddings(settings, FixedRuntime(memory))  # type: ignore[arg-type]
    return CachedEmbeddings(inner, cache)
