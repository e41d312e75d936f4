"""A chat's memory when its workspace moves to another bot token: the earlier bot's
message refs get names of their own, on real files, once, and crash-safely."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.ranking import DEFAULT_RANKING
from mnemobot.memory.services.chat_numbering import adopt_numbering
from mnemobot.memory.services.forget import MemoryForget
from mnemobot.memory.services.recall import MemoryRecall
from mnemobot.memory.services.record import MemoryRecord
from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.services.vectors import MemoryVectors
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.item_store import INDEX_FILE_MIN_ITEMS
from mnemobot.memory.store.items import ItemType
from mnemobot.memory.store.scope_paths import GLOBAL_SCOPE
from mnemobot.memory.upkeep.digest_days import write_missing_digests
from mnemobot.memory.upkeep.ref_numbering import (
    MARK_FILE_NAME,
    noted_numbering,
    read_mark,
    rename_in_file,
)
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION

SCOPE = "telegram:5151"
CONFIG = MemoryConfig()
EARLIER_DAY = datetime(2025, 3, 1, 9, tzinfo=UTC).timestamp()
MOVED_AT = datetime(2025, 3, 4, 12, 0, 30, tzinfo=UTC).timestamp()
EARLIER = ["My sister Lena lives in Graz.", "I sing in a choir on Tuesdays."]


@pytest.fixture(params=[INDEX_FILE_MIN_ITEMS, 1], ids=["small", "indexed"])
def memory(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[WorkspaceMemory]:
    """A workspace's memory; "indexed": its scopes keep an index file and read items from
    their lines (as a big scope does), which the rename makes stale."""
    scopes = ScopeRuntime(tmp_path, index_file_min_items=request.param)
    vectors = MemoryVectors(scopes, None, DEFAULT_RANKING)
    opened = WorkspaceMemory(
        scopes=scopes,
        recall=MemoryRecall(scopes, vectors, DEFAULT_RANKING),
        record=MemoryRecord(scopes, DEFAULT_EXTRACTION),
        forget=MemoryForget(scopes, vectors),
        vectors=vectors,
    )
    yield opened
    opened.close()


def _say(memory: WorkspaceMemory, text: str, ref: str, at: float, scope: str = SCOPE) -> None:
    memory.record.record_turn(
        scope=scope,
        user_text=text,
        assistant_text="Noted.",
        at=at,
        config=CONFIG,
        tz=UTC,
        message_refs=[ref],
    )


def _earlier_bots_chat(memory: WorkspaceMemory, scope: str = SCOPE) -> None:
    """Bot 111's messages 1 and 2, on a finished day that has its digest."""
    adopt_numbering(memory.scopes, scope, "111", EARLIER_DAY, wait_seconds=1)
    for number, text in enumerate(EARLIER, start=1):
        _say(memory, text, f"tg:{number}", EARLIER_DAY + number, scope)
    write_missing_digests(memory.scopes.store(scope), UTC, EARLIER_DAY + 86_400)
    memory.scopes.reload(scope)


def _read(memory: WorkspaceMemory, ref: str) -> str:
    return memory.recall.message_text(SCOPE, ref) or ""


def _digest(memory: WorkspaceMemory) -> str:
    items = memory.scopes.store(SCOPE).items.values()
    return next(i.content for i in items if i.type is ItemType.DIGEST)


def test_a_move_names_the_earlier_bots_messages_for_it_and_the_new_bots_1_is_its_own(
    memory: WorkspaceMemory,
) -> None:
    _earlier_bots_chat(memory)
    assert "[tg:1] User: My sister Lena" in _digest(memory)

    renamed = adopt_numbering(memory.scopes, SCOPE, "222", MOVED_AT, wait_seconds=1)
    _say(memory, "My locker code is 1234.", "tg:1", MOVED_AT)

    assert renamed >= 2
    assert "1234" in _read(memory, "tg:1") and "Lena" not in _read(memory, "tg:1")
    assert "Lena" in _read(memory, "tg-bot111:1")
    assert "choir" in _read(memory, "tg-bot111:2")
    # The day's digest names its lines as the items do, so `read` of a line's ref finds it.
    digest = _digest(memory)
    assert "[tg-bot111:1] User: My sister Lena" in digest and "[tg:" not in digest
    # The same bot again renames nothing, and a reload reads the renamed files.
    assert adopt_numbering(memory.scopes, SCOPE, "222", MOVED_AT + 60, wait_seconds=1) == 0
    memory.scopes.reload(SCOPE)
    assert "Lena" in _read(memory, "tg-bot111:1") and "Lena" not in _read(memory, "tg:1")
    mark = read_mark(memory.scopes.paths(SCOPE))
    assert mark is not None and mark.numbering == "222" and not mark.renaming


def test_a_rename_cut_short_is_finished_later_and_never_takes_the_new_bots_messages(
    memory: WorkspaceMemory,
) -> None:
    _earlier_bots_chat(memory)
    paths = memory.scopes.paths(SCOPE)
    # Cut short: the move is recorded, one file renamed (the facts; the process died, or
    # maintenance held the files), and the new bot's turns went on meanwhile.
    mark = noted_numbering(paths, "222", MOVED_AT)
    assert rename_in_file(paths.semantic_file, mark.renaming)
    memory.scopes.reload(SCOPE)
    _say(memory, "My locker code is 1234.", "tg:1", MOVED_AT)
    _say(memory, "It opens the blue locker.", "tg:2", MOVED_AT + 5)
    assert "Lena" in _read(memory, "tg:1")

    adopt_numbering(memory.scopes, SCOPE, "222", MOVED_AT + 60, wait_seconds=1)

    assert "Lena" in _read(memory, "tg-bot111:1") and "Lena" not in _read(memory, "tg:1")
    assert "1234" in _read(memory, "tg:1")
    assert "blue locker" in _read(memory, "tg:2") and "choir" not in _read(memory, "tg:2")
    done = read_mark(paths)
    assert done is not None and not done.renaming


def test_memory_from_before_the_mark_is_the_current_bots_and_a_shared_scope_is_left_alone(
    memory: WorkspaceMemory,
) -> None:
    # Written before memory kept a mark: the bot that upgrades received those messages.
    for number, text in enumerate(EARLIER, start=1):
        _say(memory, text, f"tg:{number}", EARLIER_DAY + number)
    assert adopt_numbering(memory.scopes, SCOPE, "222", MOVED_AT, wait_seconds=1) == 0
    assert "Lena" in _read(memory, "tg:1")
    assert (memory.scopes.paths(SCOPE).directory / MARK_FILE_NAME).is_file()
    # One scope of every chat holds other chats' `tg:<n>`, some numbered alike by every bot.
    _say(memory, "Ada's note.", "tg:1", EARLIER_DAY, GLOBAL_SCOPE)
    assert adopt_numbering(memory.scopes, GLOBAL_SCOPE, "111", EARLIER_DAY, wait_seconds=1) == 0
    assert adopt_numbering(memory.scopes, GLOBAL_SCOPE, "222", MOVED_AT, wait_seconds=1) == 0
    assert memory.recall.message_text(GLOBAL_SCOPE, "tg:1") is not None


def test_memory_from_before_the_mark_is_renamed_by_the_moves_the_conversation_shows(
    memory: WorkspaceMemory,
) -> None:
    """A workspace moved before memory kept a mark has both bots' `tg:1`: the session,
    which names the earlier bot's messages, says when the new bot's first one came."""
    for number, text in enumerate(EARLIER, start=1):
        _say(memory, text, f"tg:{number}", EARLIER_DAY + number)
    _say(memory, "My locker code is 1234.", "tg:1", MOVED_AT)

    later = MOVED_AT + 3_600
    unmarked = [("111", MOVED_AT + 0.4)]
    assert adopt_numbering(memory.scopes, SCOPE, "222", later, wait_seconds=1, unmarked=unmarked)

    assert "1234" in _read(memory, "tg:1") and "Lena" not in _read(memory, "tg:1")
    assert "Lena" in _read(memory, "tg-bot111:1")
    mark = read_mark(memory.scopes.paths(SCOPE))
    assert mark is not None and mark.numbering == "222" and not mark.renaming


def test_a_statement_the_new_bot_said_again_before_the_rename_keeps_the_new_bots_ref(
    memory: WorkspaceMemory,
) -> None:
    """Found in review: the rename named by the time an item was first said, and an item
    the new bot said again (merged, keeping the earliest time) lost its `tg:2` to the
    earlier bot: `read tg:2` missed the new bot's message."""
    _earlier_bots_chat(memory)
    paths = memory.scopes.paths(SCOPE)
    # The move noted, the rename still to do (maintenance held the files), and the new
    # bot's message 2 says the earlier bot's message 1 again.
    noted_numbering(paths, "222", MOVED_AT)
    _say(memory, EARLIER[0], "tg:2", MOVED_AT + 5)

    adopt_numbering(memory.scopes, SCOPE, "222", MOVED_AT + 60, wait_seconds=1)

    assert "Lena" in _read(memory, "tg:2")
    assert "choir" in _read(memory, "tg-bot111:2")


def test_a_hand_edited_mark_never_renames_the_current_bots_messages(
    memory: WorkspaceMemory,
) -> None:
    """Found in review: a mark edited to a move "before" the far future renamed every ref
    of the current bot; one naming no bot was read as bot "None"."""
    _say(memory, "My locker code is 1234.", "tg:1", MOVED_AT)
    mark_file = memory.scopes.paths(SCOPE).directory / MARK_FILE_NAME
    mark_file.write_text('{"refsNumberedBy": "222", "renaming": [{"bot": "111", "before": 1e300}]}')
    adopt_numbering(memory.scopes, SCOPE, "222", MOVED_AT + 60, wait_seconds=1)
    assert "1234" in _read(memory, "tg:1")

    mark_file.write_text('{"refsNumberedBy": null}')
    assert read_mark(memory.scopes.paths(SCOPE)) is None
