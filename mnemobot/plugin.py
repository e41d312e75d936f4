"""What a plugin needs, in one place: import from here, never from `mnemobot.bot`.

A plugin is an installed distribution that names factories under one of mnemobot's
entry-point groups; the bot calls each factory with the `Services` when it starts. A
factory that fails, or makes the wrong kind of object, is skipped with one log line; the
bot starts without it.

- `mnemobot.systems`: `factory(services)` returns a `System` (or a list). Its `order`
  says what it sees: below 20 the turn before the prompt is built, 21-29 the prompt
  (`ctx.system_prompt`) before the model is asked, 31-49 the reply, above 50 the turn
  after memory is written. Per-turn values for other plugins go in `ctx.extras`, under
  keys starting with your distribution's name.
- `mnemobot.tools`: `factory(services)` returns a `Tool` (or a list) the model may call.

```toml
[project.entry-points."mnemobot.systems"]
weather-hint = "mnemobot_weather:WeatherHint"   # class WeatherHint: __init__(self, services)

[project.entry-points."mnemobot.tools"]
weather = "mnemobot_weather:make_tools"         # def make_tools(services) -> list[Tool]
```

Everything here comes from `mnemobot.systems` and the layers below it, so a plugin loads
none of the bot's channels, commands or CLI.
"""

from __future__ import annotations

from mnemobot.systems.core.context import ChatRef, TurnContext
from mnemobot.systems.core.llm import ChatModel, ChatRequest, ChatResponse, LLMError, LLMFailureKind
from mnemobot.systems.core.pipeline import System
from mnemobot.systems.core.services import Services
from mnemobot.systems.core.tool_runner import Tool, ToolError

__all__ = [
    "ChatModel",
    "ChatRef",
    "ChatRequest",
    "ChatResponse",
    "LLMError",
    "LLMFailureKind",
    "Services",
    "System",
    "Tool",
    "ToolError",
    "TurnContext",
]
