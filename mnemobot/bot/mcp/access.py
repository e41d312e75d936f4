"""Who may use which MCP server's tools, decided before each turn's tool loop.

MCP tools act on the world with the operator's credentials, so they are offered only where
the operator said: by default to the users named in TELEGRAM_ALLOWED_USERS (and the
operators), in private chats. Per server, `chats` widens or narrows where, `users` may
open them to whoever the bot serves, and `groupUse` says who in a group may use them,
checked by the same permissions as the group commands (administrators asked of Telegram).
"""

from __future__ import annotations

from collections.abc import Callable

from mnemobot.bot.mcp.config import McpConfig, McpServerConfig
from mnemobot.bot.mcp.tool_adapter import tool_set_of
from mnemobot.bot.turn.permissions import Permissions
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.config.settings import Settings
from mnemobot.systems.core.context import ChatRef, TurnContext

MCP_SECTION = "mcp"


def mcp_config(config: RuntimeConfig) -> McpConfig:
    return config.section(MCP_SECTION, McpConfig)


def named_users(settings: Settings, permissions: Permissions) -> Callable[[ChatRef], bool]:
    """Whether a chat's user is one the operator named: an operator (the person at the
    console is one), or a user id listed in TELEGRAM_ALLOWED_USERS ("*" names nobody)."""

    def named(chat: ChatRef) -> bool:
        if permissions.is_operator(chat):
            return True
        user = chat.user_id
        if chat.channel != "telegram" or user is None or not user.lstrip("-").isdigit():
            return False
        return int(user) in settings.telegram_allowed_users

    return named


def in_chats(server: McpServerConfig, chat: ChatRef) -> bool:
    if server.chats == "all":
        return True
    if server.chats == "private":
        return not chat.is_group
    return bool({chat.key, f"{chat.channel}:{chat.chat_id}", chat.chat_id} & set(server.chats))


class McpToolAccess:
    """A pipeline system (before compaction counts the tools): sets the turn's
    `allowed_tool_sets` to the MCP servers its user may use in its chat."""

    name = "McpToolAccess"
    order = 16

    def __init__(self, permissions: Permissions, named: Callable[[ChatRef], bool]) -> None:
        self.permissions = permissions
        self.named = named

    def enabled(self, ctx: TurnContext) -> bool:
        return bool(mcp_config(ctx.config).servers)

    async def process(self, ctx: TurnContext) -> None:
        ctx.allowed_tool_sets = await self.tool_sets_for(ctx.chat, ctx.config)

    async def tool_sets_for(self, chat: ChatRef, config: RuntimeConfig) -> frozenset[str]:
        allowed = set()
        for name, server in mcp_config(config).servers.items():
            if await self.may_use(chat, server):
                allowed.add(tool_set_of(name))
        return frozenset(allowed)

    async def may_use(self, chat: ChatRef, server: McpServerConfig) -> bool:
        if not server.enabled or not in_chats(server, chat):
            return False
        if server.users == "allowed" and not self.named(chat):
            return False
        return not chat.is_group or await self.permissions.has_level(chat, server.group_use)
