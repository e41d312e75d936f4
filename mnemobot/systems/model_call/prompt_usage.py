"""The input tokens of a chat's model calls since its conversation began (`/new`): how many
the server took from its cache and how many it computed anew, for `/status`.

Kept in the session's metadata, so the figures survive restarts and replicas like the
conversation they describe. Only the chat's own calls count (its turns), not compaction or
maintenance calls.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from mnemobot.systems.core.llm import ChatResponse

INPUT_TOKENS_KEY = "inputTokens"


def count_input(metadata: MutableMapping[str, Any], response: ChatResponse) -> None:
    """Add one answered call's prompt tokens to the session's counts."""
    if response.prompt_tokens is None:
        return
    counts = metadata.get(INPUT_TOKENS_KEY)
    if not isinstance(counts, dict):
        counts = metadata[INPUT_TOKENS_KEY] = {"calls": 0, "prompt": 0, "cached": 0, "told": 0}
    counts["calls"] = int(counts.get("calls", 0)) + 1
    counts["prompt"] = int(counts.get("prompt", 0)) + response.prompt_tokens
    if response.cached_prompt_tokens is not None:
        # Calls whose server said what it cached; the others count as new input.
        counts["told"] = int(counts.get("told", 0)) + 1
        cached = min(response.cached_prompt_tokens, response.prompt_tokens)
        counts["cached"] = int(counts.get("cached", 0)) + cached


def input_tokens_line(metadata: MutableMapping[str, Any]) -> str:
    """`/status`: the conversation's input tokens, cached and new, as the server told them."""
    counts = metadata.get(INPUT_TOKENS_KEY)
    if not isinstance(counts, dict) or not counts.get("calls"):
        return "Input tokens: no model call in this conversation yet"
    calls, prompt = int(counts.get("calls", 0)), int(counts.get("prompt", 0))
    cached = int(counts.get("cached", 0))
    said = f"{calls:,} model call{'' if calls == 1 else 's'}"
    if not counts.get("told"):
        return f"Input tokens: {prompt:,} in {said} (the model server does not say what it cached)"
    share = f"{cached / prompt:.0%}" if prompt else "0%"
    return (
        f"Input tokens: {cached:,} cached, {prompt - cached:,} new ({share} from the model "
        f"server's cache) in {said}"
    )
