"""How much one background model call may send to a model whose context window is known.

Consolidation and the compaction flush and summary send material (notes, facts, messages)
that can be far larger than a small local model's window: SmolLM2 on llama.cpp holds 2,048
tokens, prompt and answer together. Sent whole, such a request is refused every time.
So each call is sized to the window of the model it goes to (`llm.summaryModel` or the
chat model), and material that does not fit is split over several calls.

The token counts are estimates (`estimate_tokens`, about 4 characters a token for Latin
text); a model's own tokenizer may count more, so the prompt is kept a margin under what
the window leaves. When a server still refuses a call as too long, the caller halves the
material and tries again (`SHRINK_AFTER_OVERFLOW`).

Pure functions: window and sizes in, budgets out.
"""

from __future__ import annotations

from dataclasses import dataclass

# Our estimate may count this much fewer tokens than the model's tokenizer (llama.cpp with
# SmolLM2 counted up to about 10% more on English notes), plus the chat template's tokens.
PROMPT_MARGIN = 1.15
TEMPLATE_TOKENS = 32
# On a small window, the rewritten MEMORY.md may take at most this share of it: the prompt
# holds the current file, new material and instructions, and the answer the new file and
# the list of what it replaced.
MEMORY_FILE_WINDOW_SHARE = 0.2
# Room for the "## Superseded" list, as a share of the file's cap.
SUPERSEDED_SHARE = 0.5
# Material per call below which splitting further is pointless (a single note line).
MIN_MATERIAL_TOKENS = 64
# After a "too long" refusal the material of the call is cut by this factor, at most
# this many times in a row.
SHRINK_AFTER_OVERFLOW = 0.5
MAX_SHRINKS = 3


@dataclass(frozen=True, slots=True)
class RewriteBudget:
    """One consolidation call: the largest MEMORY.md it may write and the new material
    (notes and facts, estimated tokens) it may read beside the current file."""

    cap_tokens: int
    material_tokens: int
    answer_tokens: int


def rewrite_budget(
    *,
    window_tokens: int | None,
    cap_tokens: int,
    max_material_tokens: int,
    fixed_prompt_tokens: int,
    answer_extra_tokens: int,
) -> RewriteBudget | None:
    """The budget of one MEMORY.md rewrite, or None when the window cannot hold one.

    `cap_tokens`: the configured cap of the file; `max_material_tokens`: what the config
    lets one run read; `fixed_prompt_tokens`: instructions plus the current file;
    `answer_extra_tokens`: what the answer holds besides the file (the superseded list).
    With no known window the configured figures stand.
    """
    if window_tokens is None:
        return RewriteBudget(cap_tokens, max_material_tokens, cap_tokens + answer_extra_tokens)
    cap = min(cap_tokens, int(window_tokens * MEMORY_FILE_WINDOW_SHARE))
    answer = cap + min(answer_extra_tokens, int(cap * SUPERSEDED_SHARE))
    room = prompt_room(window_tokens, answer) - fixed_prompt_tokens
    material = min(max_material_tokens, room)
    if material < MIN_MATERIAL_TOKENS:
        return None
    return RewriteBudget(cap, material, answer)


def prompt_room(window_tokens: int, answer_tokens: int) -> int:
    """Estimated prompt tokens a request may have so that it and the answer fit."""
    return int((window_tokens - answer_tokens) / PROMPT_MARGIN) - TEMPLATE_TOKENS


def input_budget(
    window_tokens: int | None, *, answer_tokens: int, fixed_prompt_tokens: int, configured: int
) -> int:
    """Tokens of material one call may send (the configured figure when no window is
    known); at least MIN_MATERIAL_TOKENS, so a call always carries something."""
    if window_tokens is None:
        return configured
    room = prompt_room(window_tokens, answer_tokens) - fixed_prompt_tokens
    return max(MIN_MATERIAL_TOKENS, min(configured, room))
