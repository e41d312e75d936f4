"""A streamed chat completion put back together: text, tool calls, finish reason, usage.

Servers differ in how they stream (OpenAI, vLLM, llama.cpp, Ollama): a tool call's name
may come whole or in pieces, its arguments in fragments, its index may be missing (one
call per chunk, named by its id); usage comes in a last chunk without choices, or never.
Prompt tokens taken from the server's cache come with the usage (OpenAI) or as llama.cpp's
`timings` on the last chunk. `StreamedAnswer.add` takes the chunks in order; `complete`
says whether the stream ended the way a finished answer does (with a finish reason): a
stream that stops without one was cut short (llama-cpp-python ends an overflowing request
with an empty body, and cuts a running stream when another request comes in), and is asked
for again without streaming.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnemobot.bot.llm.prompt_cache import prompt_cache_counts
from mnemobot.bot.llm.reasoning_text import visible_answer
from mnemobot.conversation.session import valid_unicode
from mnemobot.systems.core.llm import ChatResponse, ToolCall


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamedAnswer:
    """The chunks of one streamed completion so far."""

    text: list[str] = field(default_factory=list)
    calls: list[_PartialCall] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    chunks: int = 0

    def add(self, chunk: Any) -> bool:
        """Take one `ChatCompletionChunk`; True when it added answer text."""
        self.chunks += 1
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.prompt_tokens = getattr(usage, "prompt_tokens", None)
            self.completion_tokens = getattr(usage, "completion_tokens", None)
        counts = prompt_cache_counts(chunk)
        if counts.cached is not None:
            self.cached_prompt_tokens = counts.cached
            if self.prompt_tokens is None:
                self.prompt_tokens = counts.prompt
        grew = False
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) not in (0, None):
                continue  # only the first choice is asked for
            delta = getattr(choice, "delta", None)
            if delta is not None:
                content = getattr(delta, "content", None)
                if content:
                    self.text.append(content)
                    grew = True
                for call in getattr(delta, "tool_calls", None) or ():
                    self._add_call(call)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason
        return grew

    def _add_call(self, delta: Any) -> None:
        index = getattr(delta, "index", None)
        call_id = getattr(delta, "id", None) or ""
        if index is None:
            # No index: a call is named by its id; a fragment without either belongs to
            # the last call.
            known = [c.id for c in self.calls]
            if call_id and call_id in known:
                index = known.index(call_id)
            elif call_id or not self.calls:
                index = len(self.calls)
            else:
                index = len(self.calls) - 1
        while len(self.calls) <= index:
            self.calls.append(_PartialCall())
        partial = self.calls[index]
        if call_id and not partial.id:
            partial.id = call_id
        function = getattr(delta, "function", None)
        if function is not None:
            name = getattr(function, "name", None)
            if name and not partial.name.endswith(name):
                partial.name += name
            arguments = getattr(function, "arguments", None)
            if arguments:
                partial.arguments.append(arguments)

    @property
    def content(self) -> str:
        return "".join(self.text)

    @property
    def shown(self) -> str:
        """What a reader may see of the answer so far: not the model's thinking."""
        return visible_answer(self.content)

    @property
    def complete(self) -> bool:
        """The stream ended as a finished answer does: with a finish reason."""
        return self.finish_reason is not None

    def response(self) -> ChatResponse:
        calls = [
            ToolCall(
                id=call.id,
                name=call.name,
                arguments=valid_unicode("".join(call.arguments)),
            )
            for call in self.calls
            if call.name
        ]
        return ChatResponse(
            content=visible_answer(valid_unicode(self.content)) if self.text or not calls else None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens,
        )
