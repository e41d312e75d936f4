"""Session files: atomic saves, restart survival, corrupt files moved aside."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mnemobot.base.atomic_file import read_jsonl
from mnemobot.conversation.session import InvalidSessionKey, SessionStore
from tests.crash_points import run_to_crash


def test_a_conversation_survives_a_restart(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.get("console:local")
    session.messages.append({"role": "user", "content": "remember me"})
    store.save(session)
    reloaded = SessionStore(tmp_path).get("console:local")
    assert reloaded.messages == [{"role": "user", "content": "remember me"}]
    data = json.loads((tmp_path / "console:local.json").read_text())
    assert {
        "id",
        "channelType",
        "chatId",
        "messages",
        "metadata",
        "state",
        "createdAt",
        "updatedAt",
    } <= set(data)
    assert data["channelType"] == "console" and data["chatId"] == "local"


def test_a_corrupt_session_is_moved_aside_and_the_chat_starts_fresh(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "telegram:42.json").write_text('{"id": "telegram:42", "messages": [')
    with caplog.at_level(logging.WARNING):
        session = SessionStore(tmp_path).get("telegram:42")
    assert session.messages == []
    aside = list(tmp_path.glob("telegram:42.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text().startswith('{"id"')
    assert "moved it to" in caplog.text


def test_session_keys_cannot_escape_the_sessions_folder(tmp_path: Path) -> None:
    for key in ("../x", "console:../../etc", "console", "a/b:c", ""):
        with pytest.raises(InvalidSessionKey):
            SessionStore(tmp_path).path_for(key)


WRITER = """
from pathlib import Path
from mnemobot.conversation.session import SessionStore
store = SessionStore(Path(sys.argv[1]))
session = store.get("console:local")
for i in range(4):
    if i == 3:
        arm()
    session.messages.append({"role": "user", "content": "x" * 20000 + str(i)})
    store.save(session)
"""


@pytest.mark.parametrize(
    ("point", "saved"), [("mid-write", 3), ("before-replace", 3), ("after-replace", 4)]
)
def test_a_save_killed_at_any_point_leaves_the_old_or_the_new_file(
    tmp_path: Path, point: str, saved: int
) -> None:
    run_to_crash(WRITER, point, str(tmp_path))
    if point == "mid-write":
        # The kill did land mid-write: half a file is left beside the session.
        [torn] = tmp_path.glob(".console:local.json.*.tmp")
        assert 0 < torn.stat().st_size < (tmp_path / "console:local.json").stat().st_size
    session = SessionStore(tmp_path).get("console:local")
    # Old or new, never broken: the file parses, its messages are whole, none moved aside.
    assert not list(tmp_path.glob("*.corrupt-*"))
    assert [m["content"] for m in session.messages] == ["x" * 20000 + str(i) for i in range(saved)]


def test_undecodable_text_never_blocks_a_save(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.get("console:local")
    session.messages.append({"role": "user", "content": "bad \udcff\udcfe bytes"})
    session.messages.append({"role": "assistant", "content": "lone \ud800 surrogate"})
    store.save(session)
    reloaded = SessionStore(tmp_path).get("console:local")
    assert [m["content"] for m in reloaded.messages] == [
        "bad \ufffd\ufffd bytes",
        "lone \ufffd\ufffd\ufffd surrogate",
    ]


def test_a_session_with_a_roleless_message_is_moved_aside(tmp_path: Path) -> None:
    (tmp_path / "console:local.json").write_text(
        json.dumps(
            {
                "id": "console:local",
                "channelType": "console",
                "chatId": "local",
                "messages": [{"content": "hand edit without a role"}],
                "createdAt": "2026-01-01T00:00:00Z",
                "updatedAt": "2026-01-01T00:00:00Z",
            }
        )
    )
    assert SessionStore(tmp_path).get("console:local").messages == []
    assert len(list(tmp_path.glob("console:local.json.corrupt-*"))) == 1


def test_offloading_the_same_messages_again_after_a_crash_logs_them_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)

    def message(text: str, second: int) -> dict[str, object]:
        return {"role": "user", "content": text, "at": f"2026-01-01T00:00:{second:02}Z"}

    first = [message(f"m{n}", n) for n in range(3)]
    store.append_offload("console:local", first)
    # Killed before the shortened session was saved: the next compaction drops the same
    # messages and one more.
    store.append_offload("console:local", [*first[1:], message("m3", 3)])
    # The same words said again later are another message, and logged.
    store.append_offload("console:local", [message("m3", 9), message("m0", 10)])
    logged = [m["content"] for m in read_jsonl(store.offload_path_for("console:local")).records]
    assert logged == ["m0", "m1", "m2", "m3", "m3", "m0"]
