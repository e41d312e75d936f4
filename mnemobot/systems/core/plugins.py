"""Entry-point plugins: find them, call their factories with `Services`, skip broken ones.

An entry point names a factory: a function or class taking the `Services` (new style), or
taking nothing (the older zero-argument style, still accepted; told apart by signature),
or a ready-made object. A plugin that fails anywhere, from import to installation, is
logged in one line and skipped, so a broken plugin cannot keep the bot from starting.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points

from mnemobot.systems.core.services import Services

log = logging.getLogger(__name__)


def call_factory(target: object, services: Services) -> object:
    """What `target` makes: `target(services)`, `target()`, or `target` itself if not callable."""
    if not callable(target):
        return target
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # some builtins and C types have no signature
        return target()
    try:
        signature.bind(services)
    except TypeError:
        try:
            signature.bind()
        except TypeError:
            raise TypeError(
                f"the factory takes {signature}; it must take one argument (the Services) or none"
            ) from None
        return target()
    return target(services)


def as_list(made: object) -> list[object]:
    """A factory may return one object or a list (or tuple) of them."""
    return list(made) if isinstance(made, list | tuple) else [made]


def describe(entry: EntryPoint) -> str:
    dist = f" of {entry.dist.name} {entry.dist.version}" if entry.dist is not None else ""
    return f"{entry.name} ({entry.value}){dist}"


def load_plugins(group: str, services: Services, install: Callable[[object], None]) -> list[str]:
    """Load every entry point of `group` and hand what its factory made to `install`.

    `install` checks what it gets and raises to reject it (nothing of that plugin must
    be installed then). Returns the names of the plugins installed.
    """
    installed: list[str] = []
    for entry in entry_points(group=group):
        try:
            made = call_factory(entry.load(), services)
            if inspect.iscoroutine(made):
                made.close()  # never awaited: close it so Python does not warn at exit
                raise TypeError("the factory is async; it must return its object directly")
            install(made)
        except Exception as exc:  # any plugin bug, import errors included
            owner = entry.dist.name if entry.dist is not None else "its distribution"
            log.error(
                "skipping plugin %s from %s: %s: %s; fix or uninstall %s",
                describe(entry),
                group,
                type(exc).__name__,
                exc,
                owner,
            )
            log.debug("plugin %s failed", entry.name, exc_info=True)
            continue
        log.info("loaded plugin %s from %s", describe(entry), group)
        installed.append(entry.name)
    return installed
