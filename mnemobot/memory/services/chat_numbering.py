"""Which bot numbers a scope's message refs, and the earlier bots' refs renamed once the
chat has moved to another bot (`memory.upkeep.ref_numbering`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.store.scope_paths import GLOBAL_SCOPE
from mnemobot.memory.upkeep.maintenance import maintenance_paused
from mnemobot.memory.upkeep.ref_numbering import (
    NumberingMark,
    noted_numbering,
    rename_earlier_refs,
    write_mark,
)

log = logging.getLogger(__name__)


def adopt_numbering(
    scopes: ScopeRuntime,
    scope: str,
    numbering: str,
    at: float,
    *,
    wait_seconds: float,
    unmarked: Sequence[tuple[str, float]] = (),
) -> int:
    """Note that bot `numbering` numbers the scope's messages from `at` on; when another
    bot numbered them before, rename that bot's refs (`tg:<n>` -> `tg-bot<id>:<n>`).
    How many items were renamed. `unmarked`: the moves the conversation shows, for memory
    from before a mark was kept (`noted_numbering`).

    A shared scope (memory.scope "global") is left as it is: its `tg:<n>` are of many
    chats, some numbered alike for every bot (a supergroup's). Raises `filelock.Timeout`
    when maintenance holds the scope's files longer than `wait_seconds`, and OSError: the
    rename is then still to do, and is done at the next call.
    """
    if scope == GLOBAL_SCOPE:
        return 0
    paths = scopes.paths(scope)
    with scopes.lock(scope):
        paths.directory.mkdir(parents=True, exist_ok=True)
        mark = noted_numbering(paths, numbering, at, unmarked)
    if not mark.renaming:
        return 0
    # Maintenance's lock first, then the scope's, as moving a scope takes them.
    with maintenance_paused(paths, wait_seconds), scopes.lock(scope):
        mark = noted_numbering(paths, numbering, at)
        if not mark.renaming:
            return 0
        renamed = rename_earlier_refs(paths, mark.renaming)
        scopes.reload(scope)
        write_mark(paths, NumberingMark(numbering))
    log.info(
        "memory scope %s is now bot %s's: %d items renamed to name the messages of bot %s "
        "as tg-bot<id>:<n>",
        scope,
        numbering,
        renamed,
        ", ".join(r.bot for r in mark.renaming),
    )
    return renamed
