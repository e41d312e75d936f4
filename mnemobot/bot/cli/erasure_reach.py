"""What the erasure of forgotten texts reaches when a CLI command runs it, outside the bot.

`mnemobot memory maintain` and `mnemobot web` erase with services of their own: with
replicas, the sessions in Redis (under each chat's lease, as the bot does); and the
delivery journals on the workspace, but only while no bot runs (a running bot, or
replica, writes them; its own next erasure of the chat redacts them).
"""

from __future__ import annotations

from functools import partial

from mnemobot.bot.delivery.journal import DurableQueue
from mnemobot.bot.delivery.journal_redaction import JournalKeeper
from mnemobot.bot.delivery.redis_erasure import RedisSessionHolds
from mnemobot.bot.delivery.replicas import Replicas, open_replicas
from mnemobot.config.settings import Settings
from mnemobot.config.workspace import WorkspacePaths
from mnemobot.memory.services.workspace_memory import WorkspaceMemory


def delivery_journals(paths: WorkspacePaths) -> list[DurableQueue]:
    """The channels' journals on the workspace, as they are now."""
    return [DurableQueue(path) for path in sorted(paths.delivery.glob("*.jsonl"))]


def reach_beyond_files(
    memory: WorkspaceMemory,
    paths: WorkspacePaths,
    *,
    replicas: Replicas | None,
    bot_running: bool,
) -> None:
    """Have `memory`'s erasure redact the sessions in `replicas`' Redis, and the journals
    when no bot runs."""
    if replicas is not None:
        memory.forget.keep_sessions_in(RedisSessionHolds(replicas))
    if not bot_running:
        # No delivery loop: an entry still live stays so until a bot runs again.
        keeper = JournalKeeper(partial(delivery_journals, paths), paths.root, waits=False)
        memory.forget.add_keeper(keeper)


def replicas_of(settings: Settings) -> Replicas | None:
    """The replicas' Redis, when BOT_REDIS_URL is set (no connection is made yet)."""
    url = settings.bot_redis_url
    return open_replicas(url.get_secret_value()) if url is not None else None
