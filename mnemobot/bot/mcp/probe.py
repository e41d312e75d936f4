"""For `mnemobot doctor`: start each configured MCP server once, list its tools, stop it.

Every line is free of secrets: a server is named by its command (without arguments) or
its URL's scheme, host and port, and a failure's reason has every value filled into its
env, headers or URL taken out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

from mnemobot.bot.mcp.config import DEFAULT_MCP_TIMING, McpServerConfig, McpTiming
from mnemobot.bot.mcp.connection import (
    StderrTail,
    describe_failure,
    open_link,
    url_for_display,
)
from mnemobot.bot.mcp.secrets import MissingVariables, fill_server, literal_secrets, without_secrets
from mnemobot.bot.mcp.tool_adapter import is_offered, needs_confirmation, prefixed_name


@dataclass(frozen=True, slots=True)
class ServerProbe:
    name: str
    ok: bool
    # What it offers, or why it failed: one line.
    detail: str
    # Keys holding a secret written into runtime-config.json.
    literal_secrets: list[str] = field(default_factory=list)


def where(server: McpServerConfig) -> str:
    """How a server is reached, safe to print."""
    if server.command is not None:
        return f"`{server.command}`"
    return url_for_display(server.url)


async def probe_server(
    name: str,
    server: McpServerConfig,
    environment: Mapping[str, str],
    timing: McpTiming = DEFAULT_MCP_TIMING,
) -> ServerProbe:
    literal = literal_secrets(server)
    try:
        filled = fill_server(server, environment)
    except MissingVariables as error:
        return ServerProbe(name, False, str(error), literal)
    stderr = StderrTail(filled.secrets)
    try:
        async with open_link(
            name,
            server,
            filled,
            start_timeout_seconds=timing.start_timeout_seconds,
            stderr=stderr,
        ) as link:
            tools = link.tools
    except (Exception, asyncio.CancelledError) as error:
        return ServerProbe(
            name, False, describe_failure(error, server, filled.secrets, stderr), literal
        )
    offered = [t for t in tools if is_offered(server, t.name)]
    denied = [t.name for t in tools if not is_offered(server, t.name)]
    names = ", ".join(
        t.name + (" (asks to confirm)" if needs_confirmation(server, t.name) else "")
        for t in offered
    )
    detail = f"{where(server)} offers {len(offered)} tool(s)"
    if offered:
        example = prefixed_name(name, offered[0].name)
        detail += f" as mcp_{name}_<tool> (e.g. {example}): {names}"
    if denied:
        detail += f"; not offered (allowTools, denyTools): {', '.join(denied)}"
    return ServerProbe(name, True, without_secrets(detail, filled.secrets), literal)
