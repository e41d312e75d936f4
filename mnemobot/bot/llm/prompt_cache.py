"""What a model server says about the prompt tokens it took from its cache.

Servers keep the work of a request's beginning for the next request that begins the same
(see `systems.core.newest_context`) and say how much of a prompt that was in one of two ways:
OpenAI-compatible servers (OpenAI, DeepSeek, vLLM, SGLang) as
`usage.prompt_tokens_details.cached_tokens`; llama.cpp's own server as `timings` beside the
answer (`cache_n` tokens from the cache, `prompt_n` evaluated anew). Ollama and
llama-cpp-python's server say neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PromptCacheCounts:
    # Prompt tokens from the cache; None when the server did not say.
    cached: int | None = None
    # The whole prompt, when only `timings` told it (cache_n + prompt_n).
    prompt: int | None = None


def prompt_cache_counts(answer: Any) -> PromptCacheCounts:
    """The counts in an SDK `ChatCompletion` or `ChatCompletionChunk` (timings are fields
    the SDK does not know: they come as extras)."""
    usage = getattr(answer, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = _count(getattr(details, "cached_tokens", None))
    if cached is not None:
        return PromptCacheCounts(cached=cached)
    timings = (getattr(answer, "model_extra", None) or {}).get("timings")
    if isinstance(timings, dict):
        reused, evaluated = _count(timings.get("cache_n")), _count(timings.get("prompt_n"))
        if reused is not None and evaluated is not None:
            return PromptCacheCounts(cached=reused, prompt=reused + evaluated)
    return PromptCacheCounts()


def _count(value: object) -> int | None:
    """A token count as servers send it; None for anything that is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)
