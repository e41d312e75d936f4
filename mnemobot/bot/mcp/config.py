"""The `mcp` section of runtime-config.json: which MCP servers to run, and who may use them.

A server is started from a command (stdio: `command`, `args`, `env`, `cwd`) or reached at
a URL (streamable HTTP: `url`, `headers`), the shape most MCP clients use. A secret is
never written here: an `env` or `headers` value, or the `url` (a key in its query, often),
names it as `${VARIABLE}`, read from the bot's environment or env file when the server is
started.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from mnemobot.config.runtime import ConfigSection, PermissionLevel

# A server's name starts its tools' names (`mcp_<server>_<tool>`, at most 64 characters).
SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,23}")
VARIABLE_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# What other MCP clients write in `type`; all mean one of the two transports.
STDIO_TYPES = frozenset({"stdio"})
HTTP_TYPES = frozenset({"http", "streamable-http", "streamableHttp", "streamable_http"})


def _check_references(value: str) -> None:
    if "${" in VARIABLE_REFERENCE.sub("", value):
        raise ValueError(
            f"{value.split('${', 1)[0]}${{... is not a variable reference; write "
            "${NAME} with letters, digits and _ only"
        )


class McpServerConfig(ConfigSection):
    """One MCP server: how to reach it, which of its tools to offer, and where."""

    type: str | None = None
    """Optional, as other MCP clients write it: "stdio", or "http" / "streamable-http";
    the transport is otherwise told by `command` or `url`."""
    command: str | None = None
    """stdio: the program that starts the server (an absolute path is safest)."""
    args: list[str] = Field(default_factory=list)
    """stdio: its arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """stdio: variables set for the server, over a minimal environment (HOME, PATH, ...);
    write a secret as "${VARIABLE}", read from the bot's environment or env file."""
    cwd: str | None = None
    """stdio: the directory it runs in; null: the bot's own."""
    url: str | None = None
    """Streamable HTTP: the server's endpoint, e.g. "https://example.com/mcp"; a key in it
    as "${VARIABLE}", e.g. "https://example.com/mcp?api_key=${SEARCH_KEY}"."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Streamable HTTP: headers sent with every request, e.g. {"Authorization": "Bearer
    ${CALENDAR_TOKEN}"}."""
    enabled: bool = True
    """false: configured but not started."""
    allow_tools: list[str] | None = None
    """Only these of its tools are offered (names as the server gives them; shell-style
    wildcards such as "get_*" allowed); null: all of them."""
    deny_tools: list[str] = Field(default_factory=list)
    """These of its tools are never offered (wins over allowTools)."""
    confirm_tools: list[str] = Field(default_factory=list)
    """These of its tools run only after the user who asked confirms in the chat (a button
    on Telegram, or a reply "yes"); ["*"]: all of them."""
    chats: Literal["private", "all"] | list[str] = "private"
    """Where its tools are offered: "private" (private chats and the console), "all", or a
    list of chats ("telegram:-1001234", or a bare chat id)."""
    users: Literal["allowed", "everyone"] = "allowed"
    """"allowed": only users named in TELEGRAM_ALLOWED_USERS and the operators, even when
    that is "*"; "everyone": whoever the bot talks to."""
    group_use: PermissionLevel = "members"
    """In a group, who may have the model use its tools: "members", "admins" (the group's
    administrators and the operators) or "operators"."""
    timeout_seconds: float | None = Field(None, gt=0, le=86_400)
    """Seconds one call of its tools may take; null: toolLoop.toolTimeoutSeconds (which
    also caps this)."""

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str | None) -> str | None:
        if value is None or value in STDIO_TYPES | HTTP_TYPES:
            return value
        if value == "sse":
            raise ValueError(
                "the old SSE transport is not supported; use the server's streamable HTTP "
                'endpoint ("type": "http")'
            )
        raise ValueError(f'unknown type {value!r}; use "stdio" or "http"')

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        # The scheme is checked as written: a variable cannot turn it into another one.
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        _check_references(value)
        return value

    @field_validator("env", "headers")
    @classmethod
    def _references_well_formed(cls, values: dict[str, str]) -> dict[str, str]:
        for value in values.values():
            _check_references(value)
        return values

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError('give either "command" (a stdio server) or "url" (streamable HTTP)')
        if self.url is not None:
            if self.type in STDIO_TYPES:
                raise ValueError('"type": "stdio" needs "command", not "url"')
            if self.args or self.env or self.cwd:
                raise ValueError('"args", "env" and "cwd" are for a command; a URL takes "headers"')
        else:
            if self.type in HTTP_TYPES:
                raise ValueError(f'"type": "{self.type}" needs "url", not "command"')
            if self.headers:
                raise ValueError('"headers" are for a URL; a command takes "env"')
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def connection(self) -> tuple[object, ...]:
        """What reaching the server depends on: a change here restarts it."""
        return (
            self.command,
            tuple(self.args),
            tuple(sorted(self.env.items())),
            self.cwd,
            self.url,
            tuple(sorted(self.headers.items())),
        )

    def referenced_variables(self) -> list[str]:
        """The environment variables its `env`, `headers` and `url` name, in order, once
        each."""
        found: dict[str, None] = {}
        for value in (*self.env.values(), *self.headers.values(), self.url or ""):
            for name in VARIABLE_REFERENCE.findall(value):
                found[name] = None
        return list(found)


class McpConfig(ConfigSection):
    """MCP servers whose tools the model may use, and how they are looked after."""

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """The servers by name (letters, digits, _ and -, at most 24); see docs/mcp.md for each
    server's keys. Their tools are offered as mcp_<server>_<tool>."""
    start_timeout_seconds: float = Field(30, gt=0, le=600)
    """Seconds a server may take to start and list its tools; past it the start failed."""
    restart_first_seconds: float = Field(1, gt=0, le=3_600)
    """Pause before restarting a server that failed or stopped; it doubles after each
    failure in a row."""
    restart_max_seconds: float = Field(300, gt=0, le=86_400)
    """The longest pause between two restarts of a failing server."""
    confirm_timeout_seconds: float = Field(60, gt=0, le=3_600)
    """Seconds a tool call waits for the user's confirmation; past it the call is not run.
    The wait counts toward toolLoop.toolTimeoutSeconds."""
    check_seconds: float = Field(2, gt=0, le=3_600)
    """How often the bot looks for edits of this section (servers added, removed or
    changed are started or stopped without a restart)."""

    @field_validator("servers")
    @classmethod
    def _server_names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not SERVER_NAME.fullmatch(name):
                raise ValueError(
                    f"server name {name!r}: use letters, digits, _ and - (at most 24, "
                    "starting with a letter or digit)"
                )
        return servers

    @model_validator(mode="after")
    def _pauses_ordered(self) -> McpConfig:
        if self.restart_max_seconds < self.restart_first_seconds:
            raise ValueError("mcp.restartMaxSeconds must be >= mcp.restartFirstSeconds")
        return self
