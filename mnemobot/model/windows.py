"""Context windows learned per model endpoint, kept in `preferences/model-windows.json`.

A local model server (llama.cpp, vLLM, Ollama) often runs with a window far smaller than
the configured `llm.maxInputTokens`. Once the bot has learned the real window, from what
the server reports or from the first overflow error that states it, the figure is kept
here so a restart does not have to overflow again. One entry per endpoint and model:

    {"http://127.0.0.1:8080/v1 smollm": {"tokens": 2048, "source": "server",
      "detail": "/props n_ctx", "learnedAt": "2026-11-23T02:30:00Z"}}

Delete the file (or an entry) to make the bot learn the window afresh.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

import orjson

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.clock import SYSTEM_CLOCK, Clock, to_iso

log = logging.getLogger(__name__)

# "config": the server has not said yet (not asked yet, being asked, or unreachable);
# "assumed": it was asked and does not say. In both the configured window stands in.
WindowSource = Literal["config", "assumed", "server", "overflow error"]
_LEARNED_SOURCES: frozenset[str] = frozenset({"server", "overflow error"})

FILE_NAME = "model-windows.json"


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """A model's context window in tokens and where the figure came from."""

    tokens: int
    source: WindowSource
    # What exactly said so, e.g. "/props n_ctx" or "n_ctx in the error".
    detail: str = ""
    # When it was learned (ISO UTC); empty for the configured window.
    learned_at: str = ""

    def describe(self) -> str:
        """`2,048 tokens (from the server: /props n_ctx)`, for /status and doctor."""
        if self.source == "config":
            return (
                f"{self.tokens:,} tokens (configured: {self.detail or 'llm.maxInputTokens'}; "
                "the server has not said its window yet)"
            )
        where = {
            "assumed": "assumed: the server does not say; from the config",
            "server": "reported by the server",
            "overflow error": "learned from an overflow error",
        }[self.source]
        detail = f": {self.detail}" if self.detail else ""
        when = f", {self.learned_at[:10]}" if self.learned_at else ""
        return f"{self.tokens:,} tokens ({where}{detail}{when})"


def endpoint_key(base_url: str | None) -> str:
    """The endpoint without credentials, query or fragment: the file must hold no secrets."""
    if not base_url:
        return "default"
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _entry_key(base_url: str | None, model: str) -> str:
    return f"{endpoint_key(base_url)} {model}"


class ModelWindowStore:
    """Reads the file once, rewrites it atomically on every change; thread-safe."""

    def __init__(self, path: Path, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, ModelWindow] | None = None

    @classmethod
    def in_workspace(cls, root: Path, *, clock: Clock = SYSTEM_CLOCK) -> ModelWindowStore:
        return cls(root / "preferences" / FILE_NAME, clock=clock)

    def get(self, base_url: str | None, model: str) -> ModelWindow | None:
        with self._lock:
            return self._loaded().get(_entry_key(base_url, model))

    def put(self, base_url: str | None, model: str, window: ModelWindow) -> None:
        """Remember `window`; a no-op when the same figure is known already."""
        if window.source not in _LEARNED_SOURCES or window.tokens <= 0:
            raise ValueError(f"not a learned window: {window}")
        key = _entry_key(base_url, model)
        with self._lock:
            entries = self._loaded()
            known = entries.get(key)
            if known is not None and known.tokens == window.tokens:
                return
            if not window.learned_at:
                window = replace(window, learned_at=to_iso(self.clock()))
            entries[key] = window
            document = {
                name: {
                    "tokens": entry.tokens,
                    "source": entry.source,
                    "detail": entry.detail,
                    "learnedAt": entry.learned_at,
                }
                for name, entry in entries.items()
            }
            try:
                write_atomic(self.path, orjson.dumps(document, option=orjson.OPT_INDENT_2))
            except OSError as exc:
                # Still used for this run; only the next start has to learn it again.
                log.warning("could not save %s: %s", self.path, exc)

    def _loaded(self) -> dict[str, ModelWindow]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> dict[str, ModelWindow]:
        try:
            document = orjson.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, orjson.JSONDecodeError) as exc:
            log.warning("ignoring %s (%s); the windows will be learned again", self.path, exc)
            return {}
        entries: dict[str, ModelWindow] = {}
        if not isinstance(document, dict):
            return entries
        for key, value in document.items():
            if not isinstance(value, dict):
                continue
            tokens, source = value.get("tokens"), value.get("source")
            if isinstance(tokens, int) and tokens > 0 and source in _LEARNED_SOURCES:
                entries[key] = ModelWindow(
                    tokens,
                    source,
                    str(value.get("detail") or ""),
                    str(value.get("learnedAt") or ""),
                )
        return entries
