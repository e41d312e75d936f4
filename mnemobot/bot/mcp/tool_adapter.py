"""An MCP server's tools as the registry's `Tool`s: prefixed names, the server's schema and
description, calls through the server's supervisor, results and errors as text.

What the model sees of a failure is a tool error it can act on (the server's own error
text, a time limit, a server that is down or restarting); a server that broke during the
call also leaves a note under the reply, so the user knows even if the model glosses over it.
No result, description or error holds a value handed to the server (`bot.mcp.secrets`).
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import hashlib
import logging
import re
from typing import Any

import orjson

from mnemobot.bot.i18n import words_for
from mnemobot.bot.mcp.config import McpServerConfig
from mnemobot.bot.mcp.connection import ServerTool
from mnemobot.bot.mcp.supervisor import (
    CallRefused,
    CallTimedOut,
    ServerCrashed,
    ServerSupervisor,
    ServerUnavailable,
)
from mnemobot.bot.tools.confirmations import Answer, Confirmations
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import AnyArguments, Tool, ToolError

log = logging.getLogger(__name__)

# Longest description sent to the model; some servers write pages.
MAX_DESCRIPTION_CHARS = 1_000
# Longest shown form of a call's arguments in a confirmation question.
QUESTION_ARGUMENT_CHARS = 600
# Redacting takes about 1.4 ms a megabyte for each secret (a 62 MB result and 3 secrets:
# 0.26 s): a result longer than this is redacted off the event loop.
REDACT_INLINE_CHARS = 100_000
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


TOOL_SET_PREFIX = "mcp:"


def tool_set_of(server_name: str) -> str:
    """The registry's tool set of a server's tools."""
    return f"{TOOL_SET_PREFIX}{server_name}"


def server_of(tool_set: str) -> str | None:
    """The server whose tools make `tool_set`, if it is one of a server."""
    return tool_set.removeprefix(TOOL_SET_PREFIX) if tool_set.startswith(TOOL_SET_PREFIX) else None


def prefixed_name(server_name: str, tool_name: str) -> str:
    """`mcp_<server>_<tool>`, made of the characters the model accepts, at most 64."""
    name = f"mcp_{server_name}_{_UNSAFE_NAME.sub('_', tool_name)}"
    if len(name) <= 64:
        return name
    digest = hashlib.blake2s(tool_name.encode(), digest_size=4).hexdigest()
    return f"{name[:55]}_{digest}"


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def is_offered(server: McpServerConfig, tool_name: str) -> bool:
    """allowTools / denyTools: whether the model is offered this tool of the server."""
    if _matches(tool_name, server.deny_tools):
        return False
    return server.allow_tools is None or _matches(tool_name, server.allow_tools)


def needs_confirmation(server: McpServerConfig, tool_name: str) -> bool:
    return _matches(tool_name, server.confirm_tools)


def parameters_of(tool: ServerTool) -> dict[str, Any]:
    """The tool's input schema as a function's parameters (always an object)."""
    schema = dict(tool.input_schema)
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    schema.setdefault("properties", {})
    return schema


def result_text(result: Any) -> str:
    """A CallToolResult as the text the model reads."""
    parts: list[str] = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind in ("image", "audio"):
            size = len(base64.b64decode(item.data, validate=False)) if item.data else 0
            parts.append(f"[{kind} ({item.mime_type}, {size:,} bytes) - not shown: text only]")
        elif kind == "resource":
            resource = item.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {resource.uri} (binary)]")
        elif kind == "resource_link":
            parts.append(f"[resource {item.name}: {item.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and result.structured_content is not None:
        parts.append(orjson.dumps(result.structured_content).decode())
    return "\n".join(parts)


def _question(
    server_name: str, tool: ServerTool, arguments: dict[str, Any], who: str, language: str | None
) -> str:
    """The confirmation question in the asker's language; in a group it names them."""
    shown = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
    if len(shown) > QUESTION_ARGUMENT_CHARS:
        shown = shown[:QUESTION_ARGUMENT_CHARS] + "…"
    words = words_for(language)
    if who:
        return words.gettext(
            "{name}, may I run {tool} (MCP server {server}) with {arguments}?",
            name=who,
            tool=tool.name,
            server=server_name,
            arguments=shown,
        )
    return words.gettext(
        "May I run {tool} (MCP server {server}) with {arguments}?",
        tool=tool.name,
        server=server_name,
        arguments=shown,
    )


def adapt_tool(
    server_name: str,
    server: McpServerConfig,
    tool: ServerTool,
    supervisor: ServerSupervisor,
    confirmations: Confirmations,
    confirm_timeout_seconds: float,
) -> Tool:
    confirm = needs_confirmation(server, tool.name)

    async def run(arguments: AnyArguments, ctx: TurnContext) -> str:
        values = arguments.model_dump()
        if confirm:
            who = (ctx.chat.user_name or "") if ctx.chat.is_group else ""
            question = _question(server_name, tool, values, who, ctx.chat.language)
            answer = await confirmations.ask(ctx, question, confirm_timeout_seconds)
            if answer is not Answer.YES:
                raise ToolError(_not_confirmed(answer))
        try:
            result = await supervisor.call(tool.name, values, server.timeout_seconds)
        except ServerUnavailable as error:
            raise ToolError(f"the MCP server {server_name} is not available: {error}") from None
        except ServerCrashed as error:
            ctx.notes.append(
                f"The tool server {server_name} stopped during a call; it is being restarted."
            )
            raise ToolError(
                f"the MCP server {server_name} stopped during the call ({error}); it is being "
                "restarted. Whether the action took place is unknown: tell the user, and "
                "try again only if they ask"
            ) from None
        except CallTimedOut:
            raise ToolError(
                f"the MCP server {server_name} did not answer within "
                f"{server.timeout_seconds:g} seconds (mcp.servers.{server_name}.timeoutSeconds); "
                "the call was cancelled"
            ) from None
        except CallRefused as error:
            raise ToolError(f"the MCP server {server_name} refused the call: {error}") from None
        # A server may repeat its own secrets (a token in an echo of its config): taken out
        # before the model, the chat, the session or memory see the result.
        text = result_text(result)
        if len(text) < REDACT_INLINE_CHARS:
            text = supervisor.redact(text)
        else:
            text = await asyncio.to_thread(supervisor.redact, text)
        if result.is_error:
            raise ToolError(f"{tool.name} failed: {text or 'no details given'}")
        return text

    description = (
        supervisor.redact(tool.description.strip()) or f"The {tool.name} tool of {server_name}."
    )
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[:MAX_DESCRIPTION_CHARS] + "…"
    if confirm:
        description += " (Asks the user to confirm before it runs.)"
    return Tool(
        name=prefixed_name(server_name, tool.name),
        description=description,
        arguments=AnyArguments,
        handler=run,
        parameters=parameters_of(tool),
        tool_set=tool_set_of(server_name),
    )


def _not_confirmed(answer: Answer) -> str:
    if answer is Answer.NO:
        return "not run: the user said no. Do not run it again unless they ask"
    if answer is Answer.TIMEOUT:
        return "not run: the user did not confirm in time. Ask them whether to try again"
    return "not run: it needs the user's confirmation, and they cannot be asked here"
