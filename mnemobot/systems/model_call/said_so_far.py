"""What the model has said to the user in a turn so far, and the stream that shows it."""

from __future__ import annotations

from mnemobot.systems.core.llm import ToolCall
from mnemobot.systems.core.reply_stream import ReplyStream, joined_reply
from mnemobot.systems.core.tool_runner import ToolRunner
from mnemobot.systems.model_call.model_output import without_control_characters


class SaidSoFar:
    """What the model has said to the user in this turn, and the stream that shows it.

    `earlier`: the text it wrote before each of its tool calls; `current`: the answer of
    the model call in progress, so far. The user sees them joined, in that order.
    """

    def __init__(self, stream: ReplyStream | None) -> None:
        self.stream = stream
        self.earlier: list[str] = []
        self.current = ""

    def hear(self, text: str) -> None:
        """The model call's text so far (called as it streams)."""
        self.current = without_control_characters(text)
        if self.stream is not None and self.current.strip():
            self.stream.show(joined_reply([*self.earlier, self.current.strip()]))

    @property
    def shown(self) -> bool:
        """Whether the user has seen any of the answer (a stop then keeps it)."""
        return bool(self.earlier or self.current.strip())

    def before_tools(self, content: str) -> None:
        if content:
            self.earlier.append(content)
        self.current = ""

    def tool_running(self, tools: ToolRunner, call: ToolCall, language: str | None) -> None:
        if self.stream is not None:
            self.stream.tool_running(tools.status_line(call.name, call.arguments, language))
