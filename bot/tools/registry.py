"""ToolRegistry: JSON-schema'd tools whose arguments are validated by pydantic models."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from systems.context import TurnContext
from systems.tool_runner import ToolError

ToolHandler = Callable[[Any, TurnContext], Awaitable[str] | str]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    handler: ToolHandler

    def schema(self) -> dict[str, Any]:
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }


def describe_arguments_error(error: ValidationError) -> str:
    problems = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


class ToolRegistry:
    """Implements the pipeline's ToolRunner: schemas for the model, validated execution."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self, ctx: TurnContext) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._tools.values()]

    async def run(self, name: str, arguments: str, ctx: TurnContext) -> str:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"unknown tool {name!r}; available tools: {', '.join(self.names)}")
        try:
            raw = orjson.loads(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError as exc:
            raise ToolError(f"arguments are not valid JSON ({exc}); send a JSON object") from None
        if not isinstance(raw, dict):
            raise ToolError("the arguments must be a JSON object")
        try:
            parsed = tool.arguments.model_validate(raw)
        except ValidationError as exc:
            raise ToolError(f"invalid arguments: {describe_arguments_error(exc)}") from None
        result = tool.handler(parsed, ctx)
        if inspect.isawaitable(result):
            result = await result
        return str(result)
