"""A reasoning model's thinking, kept out of the answer the bot shows, keeps and sends again.

Reasoning models (DeepSeek-R1 and its distills, Qwen3, QwQ, ...) think before they answer.
A server that parses the thinking (llama.cpp's `--reasoning-format`, vLLM's reasoning
parsers, LM Studio) sends it apart, as `reasoning_content`, which the bot never reads; one
that does not (llama.cpp with `--reasoning-format none`, some Ollama models and proxies)
leaves it in the answer as `<think>...</think>`, and a chat template that opens the block
itself (DeepSeek-R1's) leaves only the closing tag. Shown, it is pages of the model talking
to itself; kept, it would fill the session, the memory and every later request (and the
models' own templates drop an earlier turn's thinking). So the answer is what follows it.

Only thinking at the very start counts: an answer that explains the tags ("wrap it in
<think>...</think>") keeps them. Pure functions.
"""

from __future__ import annotations

import re

# The tags models think in: <think> (DeepSeek-R1, Qwen3, QwQ), <thinking> and <reasoning>
# (other fine-tunes).
_OPENING = re.compile(r"\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSING = re.compile(r"</(think|thinking|reasoning)>", re.IGNORECASE)
_OPENING_TAGS = ("<think>", "<thinking>", "<reasoning>")
_ANY_OPENING = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)


def visible_answer(text: str) -> str:
    """`text` without the thinking it starts with (see the module docstring); "" while
    that thinking is unfinished: a stream still thinking, or an answer cut off mid-thought.
    Text without thinking comes back unchanged."""
    start = text.lstrip().lower()
    if start and any(tag.startswith(start) for tag in _OPENING_TAGS):
        return ""  # a stream's first characters: "<thi" may be thinking on its way
    rest = text
    while (opening := _OPENING.match(rest)) is not None:
        closing = re.compile(f"</{opening.group(1)}>", re.IGNORECASE).search(rest, opening.end())
        if closing is None:
            return ""
        rest = rest[closing.end() :]
    if rest is text:
        # No block opened here: the template may have opened it, leaving "...</think>".
        closing = _CLOSING.search(text)
        if closing is None or _ANY_OPENING.search(text, 0, closing.start()):
            return text
        rest = text[closing.end() :]
    return rest.lstrip()
