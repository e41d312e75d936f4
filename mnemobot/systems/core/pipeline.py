"""The System protocol and the Pipeline that runs systems in `(order, name)` order."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from mnemobot.systems.core.context import SystemFailure, TurnContext
from mnemobot.systems.core.plugins import as_list, load_plugins
from mnemobot.systems.core.services import Services

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "mnemobot.systems"


@runtime_checkable
class System(Protocol):
    """One step of every turn. The pipeline runs the enabled systems in `(order, name)`
    order (AutoCompaction 18, ContextBuilding 20, ToolLoop 30, MemoryPersist 50); one that
    raises is logged and recorded in `ctx.failures`, and the others still run."""

    name: str
    order: int

    def enabled(self, ctx: TurnContext) -> bool:
        """Whether to run for this turn (read `ctx.config`: it hot-reloads)."""
        ...

    async def process(self, ctx: TurnContext) -> None:
        """Do the step: read and change `ctx`; keep the event loop free (`to_thread`)."""
        ...


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


def load_entry_point_systems(services: Services) -> list[System]:
    """Third-party systems registered under the `mnemobot.systems` entry-point group.

    An entry point names `factory(services) -> System` (or a list of them), a System class
    taking the services, or, as before, a zero-argument factory or class.
    """
    found: list[System] = []

    def install(made: object) -> None:
        checked: list[System] = []
        for system in as_list(made):
            if isinstance(system, type) or not isinstance(system, System):
                raise TypeError(
                    f"got {system!r}, not a System (name, order, enabled() and process())"
                )
            if not isinstance(system.name, str) or not isinstance(system.order, int):
                raise TypeError(f"system {system!r}: name must be a str and order an int")
            checked.append(system)
        found.extend(checked)

    load_plugins(ENTRY_POINT_GROUP, services, install)
    return found
