"""The input tokens of a chat's model calls since its conversation began (`/new`): how many
the server took from its cache and how many it computed anew, for `/status`.

Kept in the session's metadata, so the figures survive restarts and replicas like the
conversation they describe. Only the chat's own calls count (its turns), not compaction or
maintenance calls. A call whose server did not say its input tokens (llama-cpp-python's
streams carry no usage, whatever `stream_options` asks) counts with the bot's own estimate
of the request, and the line says how many are estimates.
"""

from __future__ import annotations

from collections.abc import MutableMapping
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


def input_tokens_line(metadata: MutableMapping[str, Any]) -> str:
    """`/status`: the conversation's input tokens, cached and new, as the server told them."""
    counts = metadata.get(INPUT_TOKENS_KEY)
    if not isinstance(counts, dict) or not counts.get("calls"):
        return "Input tokens: no model call in this conversation yet"
    calls, prompt = int(counts.get("calls", 0)), int(counts.get("prompt", 0))
    cached, estimated = int(counts.get("cached", 0)), int(counts.get("estimated", 0))
    said = f"{calls:,} model call{'' if calls == 1 else 's'}"
    about = "~" if estimated else ""
    if estimated == calls:
        guess = "estimated: the model server does not say how many"
    else:
        guess = f"{estimated:,} of them estimated: the model server did not say how many"
    if not counts.get("told"):
        why = guess if estimated else "the model server does not say what it cached"
        return f"Input tokens: {about}{prompt:,} in {said} ({why})"
    share = f"{cached / prompt:.0%}" if prompt else "0%"
    line = (
        f"Input tokens: {cached:,} cached, {about}{prompt - cached:,} new ({share} from the "
        f"model server's cache) in {said}"
    )
    return f"{line}; {guess}" if estimated else line
