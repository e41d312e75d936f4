"""The `mcp` section of runtime-config.json: which MCP servers to run, and who may use them.

A server is started from a command (stdio: `command`, `args`, `env`, `cwd`) or reached at
a URL (streamable HTTP: `url`, `headers`), the shape most MCP clients use. A secret is
never written here: an `env` or `headers` value, or the `url` (a key in its query, often),
names it as `${VARIABLE}`, read from the bot's environment or env file when the server is
started.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

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
    """Optional, as other clients write it: "stdio" or "http"."""
    command: str | None = None
    """stdio: the program that starts the server."""
    args: list[str] = Field(default_factory=list)
    """stdio: its arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """stdio: its variables; a secret as "${VARIABLE}" (from the bot's environment)."""
    cwd: str | None = None
    """stdio: the directory it runs in."""
    url: str | None = None
    """HTTP: the endpoint, e.g. "https://example.com/mcp" (a key as "${VARIABLE}")."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP: headers sent with every request (secrets as "${VARIABLE}")."""
    enabled: bool = True
    """false: kept, not started."""
    allow_tools: list[str] | None = None
    """Only these tools ("get_*" wildcards); null: all."""
    deny_tools: list[str] = Field(default_factory=list)
    """Never these tools."""
    confirm_tools: list[str] = Field(default_factory=list)
    """These tools run only once the user confirms in the chat; ["*"]: all."""
    chats: Literal["private", "all"] | list[str] = "private"
    """Where: "private" chats, "all", or a list of chats ("telegram:-1001234")."""
    users: Literal["allowed", "everyone"] = "allowed"
    """"allowed": named users and operators only (even with "*"); "everyone"."""
    group_use: PermissionLevel = "members"
    """In a group, who may have the model use its tools."""
    timeout_seconds: float | None = Field(None, gt=0, le=86_400)
    """Seconds one call may take (at most toolLoop.toolTimeoutSeconds)."""

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


@dataclass(frozen=True, slots=True)
class McpTiming:
    """How MCP servers are looked after: constants, not settings (a test passes faster
    ones, `build_app(tuning=...)`). None measured; chosen as noted."""

    # Seconds a server may take to start and list its tools; past it the start failed.
    # Half a minute: `npx` or `uvx` fetching a server's package at its first start.
    start_timeout_seconds: float = 30
    # Pause before restarting a server that failed or stopped; it doubles after each
    # failure in a row, up to the longest pause (a dead server is tried every 5 minutes).
    restart_first_seconds: float = 1
    restart_max_seconds: float = 300
    # Seconds a tool call waits for the user's confirmation; past it the call is not run.
    # The wait counts toward toolLoop.toolTimeoutSeconds.
    confirm_timeout_seconds: float = 60
    # How often the bot looks for edits of the `mcp` section (servers added, removed or
    # changed are started or stopped without a restart).
    check_seconds: float = 2


DEFAULT_MCP_TIMING = McpTiming()


class McpConfig(ConfigSection):
    """MCP servers whose tools the model may use."""

    # Keys earlier versions read (`config.retired_keys`): now `McpTiming`.
    retired: ClassVar[Mapping[str, object]] = {
        "startTimeoutSeconds": 30.0,
        "restartFirstSeconds": 1.0,
        "restartMaxSeconds": 300.0,
        "confirmTimeoutSeconds": 60.0,
        "checkSeconds": 2.0,
    }

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """Servers by name (letters, digits, _, -); tools offered as mcp_<server>_<tool>."""

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
