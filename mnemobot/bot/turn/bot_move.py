"""A workspace moved to another bot token: memory names the earlier bot's messages as
the conversation does (`tg-bot<id>:<n>`, see `received.retire_other_numbering`), so the
new bot's message 1 is never read as the earlier bot's."""

from __future__ import annotations

import logging
from functools import partial

from filelock import Timeout

from mnemobot.bot.turn.received import earlier_numberings
from mnemobot.conversation.session import Message
from mnemobot.memory.services.chat_numbering import adopt_numbering
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.systems.core.context import ChatRef

log = logging.getLogger(__name__)

# How long a turn waits for a maintenance run holding the chat's memory files: the rename
# is tried again at the next turn, and what the new bot records meanwhile is never renamed.
RENAME_WAIT_SECONDS = 5.0


async def adopt_chat_numbering(
    record: MemoryRecord, chat: ChatRef, scope: str, at: float, messages: list[Message]
) -> None:
    """Tell the chat's memory which bot numbers its messages from this turn (`at`) on;
    `messages`: the conversation, whose refs show a move made before memory kept a mark."""
    if chat.ref_numbering is None:
        return
    work = partial(
        adopt_numbering,
        record.scopes,
        scope,
        chat.ref_numbering,
        at,
        wait_seconds=RENAME_WAIT_SECONDS,
        unmarked=earlier_numberings(messages, at),
    )
    try:
        await record.scopes.run(scope, work, write=True)
    except (OSError, Timeout) as exc:
        log.warning(
            "could not rename the earlier bot's message refs in %s's memory yet (%s); "
            "trying again at its next turn",
            chat.key,
            exc,
        )
    except Exception:
        # Whatever else goes wrong in the rename, the turn goes on: the message is
        # answered and kept, and the rename (its mark still pending) is tried again.
        log.exception("renaming the earlier bot's message refs in %s's memory failed", chat.key)
