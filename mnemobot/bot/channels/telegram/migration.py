"""A group upgraded to a supergroup keeps its memory and its conversation.

Telegram gives the supergroup a new chat id and tells the bot twice: a service message
with `migrate_to_chat_id` in the old group and one with `migrate_from_chat_id` in the new
supergroup (and a reply sent to the old id fails with `ChatMigrated`, see
`bot.channels.telegram.replies`). Whichever comes first moves, under the new id:

- the memory scope (`memory/telegram:<old>/` -> `memory/telegram:<new>/`, see
  `memory.store.scope_move`), unless all chats share one memory;
- the session and its offload log (a basic group has no topics), older messages first;
- the files tool's folder and the `/export` zips;
- its scheduled tasks.

The move waits for what the old group still has in its lane, and holds the new chat's
turn lock from its very start: the supergroup's first message is answered with its
memory. A move that finds nothing left (the second notice) does nothing.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from telegram import Message

from mnemobot.base.atomic_file import write_atomic
from mnemobot.base.counts import counted
from mnemobot.bot.channels.base import ChannelHost
from mnemobot.bot.turn.erasure import EXPORTS_DIR_NAME, MAINTENANCE_WAIT_SECONDS, export_prefix
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.upkeep.maintenance import maintenance_paused
from mnemobot.systems.core.context import ChatRef

if TYPE_CHECKING:
    from mnemobot.bot.channels.dispatch import ChatDispatcher

log = logging.getLogger(__name__)

CHANNEL = "telegram"


def migrated_chat_ids(message: Message) -> tuple[int, int] | None:
    """(old id, new id) when `message` says a group became a supergroup, else None."""
    if message.migrate_to_chat_id is not None:
        return message.chat.id, message.migrate_to_chat_id
    if message.migrate_from_chat_id is not None:
        return message.migrate_from_chat_id, message.chat.id
    return None


def _ref_renamer(old_key: str) -> Callable[[str], str]:
    """`tg:5` of the old chat -> `tg:-42:5`: message ids count per chat, so the new chat
    has a `tg:5` of its own, which must not pass for the old one (a redelivery, a turn
    the request already carries)."""
    chat_id = old_key.split(":")[1]

    def rename(ref: str) -> str:
        return f"tg:{chat_id}:{ref[3:]}" if ref.startswith("tg:") and ref.count(":") == 1 else ref

    return rename


class ChatMigration:
    def __init__(self, app: ChannelHost, dispatcher: ChatDispatcher) -> None:
        self.app = app
        self.dispatcher = dispatcher
        self._moves: dict[tuple[int, int], asyncio.Task[None]] = {}

    def start(self, old_chat_id: int, new_chat_id: int) -> None:
        """Move the old group's chat to the new id in the background (once per pair)."""
        pair = (old_chat_id, new_chat_id)
        if pair in self._moves and not self._moves[pair].done():
            return
        task = asyncio.create_task(self._move_logged(*pair), name=f"migrate:{old_chat_id}")
        self._moves[pair] = task

    async def wait(self) -> None:
        """Wait for the moves started so far (tests, shutdown)."""
        if self._moves:
            await asyncio.wait(set(self._moves.values()))

    async def _move_logged(self, old_chat_id: int, new_chat_id: int) -> None:
        try:
            moved = await self.move(old_chat_id, new_chat_id)
        except Exception:
            log.exception("moving chat %s to %s failed", old_chat_id, new_chat_id)
            return
        if moved:
            log.info(
                "group %s became supergroup %s: moved %s",
                old_chat_id,
                new_chat_id,
                ", ".join(moved),
            )

    async def move(self, old_chat_id: int, new_chat_id: int) -> list[str]:
        """Move what the old chat id has to the new one; what was moved."""
        assistant = self.app.assistant
        old = ChatRef(CHANNEL, str(old_chat_id))
        new = ChatRef(CHANNEL, str(new_chat_id))
        # Taken before the first await: no turn of the new chat starts before the move.
        async with assistant.lock_for(new.key):
            await self.dispatcher.wait_idle(old)
            async with assistant.lock_for(old.key):
                moved = await self._move_session(old.key, new.key)
                config = assistant.config()
                old_scope, new_scope = (
                    assistant.scope_for(old, config),
                    assistant.scope_for(new, config),
                )
                if old_scope != new_scope:
                    moved += await self._move_scope(old_scope, new_scope)
                if self.app.schedule is not None:
                    moved += await self.app.schedule.move_chat(old.key, new.chat_id)
        return moved

    async def _move_session(self, old_key: str, new_key: str) -> list[str]:
        sessions = self.app.sessions
        async with sessions.exclusive(old_key) as earlier:
            if not earlier.messages and not sessions.offload_path_for(old_key).exists():
                return []
            rename = _ref_renamer(old_key)
            for message in earlier.messages:
                if isinstance(message.get("refs"), list):
                    message["refs"] = [rename(str(ref)) for ref in message["refs"]]
            async with sessions.exclusive(new_key) as later:
                later.messages[:0] = earlier.messages
                for field, values in (("metadata", earlier.metadata), ("state", earlier.state)):
                    target: dict[str, Any] = getattr(later, field)
                    for name, value in values.items():
                        target.setdefault(name, value)
                await asyncio.to_thread(self._join_logs, old_key, new_key)
                await sessions.save_async(later)
            count = len(earlier.messages)
            sessions.erase(old_key)
        return [f"the conversation ({counted(count, 'message')})"]

    def _join_logs(self, old_key: str, new_key: str) -> None:
        sessions = self.app.sessions
        old_log, new_log = sessions.offload_path_for(old_key), sessions.offload_path_for(new_key)
        if not old_log.exists():
            return
        # The old log's lines keep their numbers (they come first): a flush noted on them
        # goes on under the new key. One the new chat noted already (a rare race) is left:
        # its lines moved, and it gives nothing rather than other messages.
        old_ledger = sessions.flush_ledger_path_for(old_key)
        new_ledger = sessions.flush_ledger_path_for(new_key)
        if old_ledger.exists() and not new_ledger.exists():
            old_ledger.rename(new_ledger)
        if new_log.exists():
            write_atomic(new_log, old_log.read_bytes() + new_log.read_bytes())
            old_log.unlink()
        else:
            old_log.rename(new_log)

    async def _move_scope(self, old_scope: str, new_scope: str) -> list[str]:
        erasure = self.app.memory.forget
        paths = self.app.paths

        def move() -> list[str]:
            moved: list[str] = []
            with maintenance_paused(ScopePaths(paths.root, old_scope), MAINTENANCE_WAIT_SECONDS):
                count = erasure.move_scope(old_scope, new_scope, _ref_renamer(old_scope))
            if count:
                moved.append(f"the memory ({counted(count, 'file')})")
            folder, target = paths.files / old_scope, paths.files / new_scope
            if folder.is_dir():
                if target.exists():
                    for path in sorted(folder.iterdir()):
                        if not (target / path.name).exists():
                            path.rename(target / path.name)
                    shutil.rmtree(folder)
                else:
                    folder.rename(target)
                moved.append("the files folder")
            exports = paths.root / EXPORTS_DIR_NAME
            old_prefix, new_prefix = export_prefix(old_scope), export_prefix(new_scope)
            for path in sorted(exports.glob(f"{old_prefix}*.zip")) if exports.is_dir() else []:
                path.rename(exports / (new_prefix + path.name[len(old_prefix) :]))
            return moved

        return await asyncio.to_thread(move)
