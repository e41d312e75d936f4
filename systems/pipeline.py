"""The System protocol and the Pipeline that runs systems in `(order, name)` order."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

from systems.context import SystemFailure, TurnContext

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "mnemobot.systems"


@runtime_checkable
class System(Protocol):
    name: str
    order: int

    def enabled(self, ctx: TurnContext) -> bool: ...

    async def process(self, ctx: TurnContext) -> None: ...


class Pipeline:
    """Runs every enabled system once per turn; a failing system never stops the others."""

    def __init__(self, systems: Iterable[System]) -> None:
        self.systems: list[System] = sorted(systems, key=lambda s: (s.order, s.name))

    def add(self, system: System) -> None:
        self.systems = sorted([*self.systems, system], key=lambda s: (s.order, s.name))

    def describe(self) -> list[str]:
        return [f"{s.order:>3} {s.name}" for s in self.systems]

    async def run(self, ctx: TurnContext) -> TurnContext:
        for system in self.systems:
            try:
                if not system.enabled(ctx):
                    continue
                await system.process(ctx)
            except Exception as exc:  # isolation is the point of the pipeline
                log.exception("system %s failed in chat %s", system.name, ctx.chat.key)
                ctx.failures.append(SystemFailure(system.name, f"{type(exc).__name__}: {exc}"))
        return ctx


def load_entry_point_systems() -> list[System]:
    """Third-party systems registered under the `mnemobot.systems` entry-point group.

    An entry point names a System class or a zero-argument factory; one that fails to load
    is logged and skipped so a broken plugin cannot keep the bot from starting.
    """
    found: list[System] = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            factory = entry.load()
            system = factory()
            if not isinstance(system, System):
                raise TypeError("does not provide name, order, enabled() and process()")
            found.append(system)
        except Exception as exc:
            log.error("skipping system plugin %s: %s", entry.name, exc)
    return found
