"""The input tokens of a chat's model calls since its conversation began (`/new`): how many
the server took from its cache and how many it computed anew, for `/status`.

Kept in the session's metadata, so the figures survive restarts and replicas like the
conversation they describe. Only the chat's own calls count (its turns), not compaction or
maintenance calls. A call whose server did not say its input tokens (llama-cpp-python's
streams carry no usage, whatever `stream_options` asks) counts with the bot's own estimate
of the request, and the line says how many are estimates.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from mnemobot.systems.core.llm import ChatRequest, ChatResponse
from mnemobot.systems.model_call.request_messages import estimate_request_tokens

INPUT_TOKENS_KEY = "inputTokens"


def count_input(
    metadata: MutableMapping[str, Any], response: ChatResponse, request: ChatRequest
) -> None:
    """Add one answered call's prompt tokens to the session's counts (the estimate of
    `request` when the server did not say them)."""
    counts = metadata.get(INPUT_TOKENS_KEY)
    if not isinstance(counts, dict):
        counts = metadata[INPUT_TOKENS_KEY] = {"calls": 0, "prompt": 0, "cached": 0, "told": 0}
    counts["calls"] = int(counts.get("calls", 0)) + 1
    prompt = response.prompt_tokens
    if prompt is None:
        prompt = estimate_request_tokens(request.messages, request.tools)
        counts["estimated"] = int(counts.get("estimated", 0)) + 1
    counts["prompt"] = int(counts.get("prompt", 0)) + prompt
    if response.cached_prompt_tokens is not None:
        # Calls whose server said what it cached; the others count as new input.
        counts["told"] = int(counts.get("told", 0)) + 1
        cached = min(response.cached_prompt_tokens, prompt)
        counts["cached"] = int(counts.get("cached", 0)) + cached


@dataclass(frozen=True, slots=True)
class InputCounts:
    """A conversation's input tokens so far; `/status` words them."""

    calls: int
    prompt: int
    # Of `prompt`, what servers said they took from their cache, in `told` of the calls.
    cached: int
    told: int
    # Calls counted with the bot's own estimate (the server did not say).
    estimated: int


def input_counts(metadata: Mapping[str, Any]) -> InputCounts | None:
    """The conversation's counts; None before its first model call."""
    counts = metadata.get(INPUT_TOKENS_KEY)
    if not isinstance(counts, dict) or not counts.get("calls"):
        return None
    return InputCounts(
        *(int(counts.get(key, 0)) for key in ("calls", "prompt", "cached", "told", "estimated"))
    )
