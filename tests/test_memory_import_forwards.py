"""`mnemobot memory import` of forwards, and of files as editors save them.

A forward in an export is kept as the live bot keeps one (tests/test_telegram_media.py):
its original author's words, never those of whoever passed it on.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.conftest import run_mnemobot
from tests.telegram_exports import export_message

CHAT = "telegram:777"


def _message(
    message_id: int, day: int, author: str, text: str, **more: object
) -> dict[str, object]:
    return export_message(
        message_id, datetime(2025, 10, day, 9, 0, tzinfo=UTC), author, text, **more
    )


def _export_json(messages: list[dict[str, object]]) -> str:
    return json.dumps(
        {"name": "Anna", "type": "personal_chat", "id": 777, "messages": messages},
        ensure_ascii=False,
    )


def _mnemobot(workspace: Path, *args: str) -> tuple[int, str, str]:
    done = run_mnemobot(*args, BOT_WORKSPACE=str(workspace), BOT_TIMEZONE="UTC")
    return done.returncode, done.stdout, done.stderr


def _pack(workspace: Path, question: str) -> dict[str, object]:
    code, out, err = _mnemobot(workspace, "memory", "pack", question, "--chat", CHAT, "--json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_a_forward_in_an_export_is_its_authors_words_never_the_persons(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    export = tmp_path / "result.json"
    export.write_text(
        _export_json(
            [
                _message(1, 10, "Anna", "I moved to Marseille last week."),
                # Telegram Desktop's forward: `from` passed it on, `forwarded_from` said it.
                _message(2, 20, "Anna", "I live in Paris.", forwarded_from="Boss Person"),
            ]
        )
    )
    code, out, err = _mnemobot(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert code == 0, err
    assert "imported 2 messages" in out

    pack = _pack(workspace, "Where do I live?")
    rendered = str(pack["rendered"])
    contents = [str(item["content"]) for item in pack["items"]]  # type: ignore[attr-defined]
    # Anna's home stays Marseille, current; Paris is Boss Person's, not hers.
    [marseille] = [line for line in rendered.splitlines() if "Marseille" in line]
    assert "Anna: I moved to Marseille last week." in marseille
    assert "earlier" not in marseille, rendered
    assert not any("Anna: I live in Paris" in content for content in contents), contents
    assert all(c.startswith("Boss Person: ") for c in contents if "Paris" in c), contents
    # The daily note says whose words they were, as a live forward's does.
    notes = (workspace / "memory" / CHAT / "2025-10-20.md").read_text()
    assert "User: [forwarded from Boss Person] I live in Paris." in notes

    again = _mnemobot(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert "imported 0 messages" in again[1] and "2 already there" in again[1]


def test_a_forward_answered_by_the_assistant_shares_its_turn_and_stays_its_authors(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    export = tmp_path / "result.json"
    export.write_text(
        _export_json(
            [
                _message(1, 10, "Anna", "I moved to Marseille last week."),
                _message(2, 20, "Anna", "I live in Paris.", forwarded_from="Boss Person"),
                _message(3, 20, "Helper", "Noted: your boss lives in Paris."),
                # The assistant passing a message on is not its reply, and not Anna's words.
                _message(4, 21, "Helper", "I work at Renault.", forwarded_from=None),
            ]
        )
    )
    code, out, err = _mnemobot(
        workspace, "memory", "import", str(export), "--chat", CHAT, "--assistant", "Helper"
    )
    assert code == 0, err
    assert "imported 4 messages" in out
    pack = _pack(workspace, "Where do I live? Where do I work?")
    items = pack["items"]
    assert isinstance(items, list)
    [answered] = [i for i in items if i["type"] == "TURN" and "Noted" in i["content"]]
    assert answered["references"] == ["tg-export:2", "tg-export:3"]
    assert not any("Anna: I live in Paris" in i["content"] for i in items), items
    renault = [str(i["content"]) for i in items if "Renault" in i["content"]]
    # No name in the export: "someone", as the live bot says of an unnamed forward.
    assert renault and all(c.startswith("someone: ") for c in renault), renault
    [marseille] = [line for line in str(pack["rendered"]).splitlines() if "Marseille" in line]
    assert "earlier" not in marseille


def test_an_export_saved_with_a_byte_order_mark_is_imported(tmp_path: Path) -> None:
    """Windows Notepad's "UTF-8 with BOM": JSON all the same."""
    workspace = tmp_path / "ws"
    export = tmp_path / "result.json"
    text = _export_json([_message(1, 10, "Anna", "Ich wohne in Köln.")])
    export.write_bytes(b"\xef\xbb\xbf" + text.encode())
    code, out, err = _mnemobot(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert code == 0, err
    assert "imported 1 message " in out


def test_an_export_not_in_utf8_gets_one_line_saying_so_and_how_to_fix_it(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    export = tmp_path / "result.json"
    text = _export_json([_message(1, 10, "Anna", "Ich wohne in Köln.")])
    for encoded in (text.encode("latin-1"), text.encode("utf-16")):
        export.write_bytes(encoded)
        code, _, err = _mnemobot(workspace, "memory", "import", str(export), "--chat", CHAT)
        assert code == 2
        assert err.strip().splitlines() == [
            "mnemobot: result.json: not UTF-8 text (saved in another encoding); export the "
            "chat again from Telegram Desktop as JSON, or save the file as UTF-8"
        ]
        assert not (workspace / "memory" / CHAT).exists()


def test_a_text_is_refused_past_the_limit_the_message_names(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    export = tmp_path / "result.json"
    export.write_text(_export_json([_message(1, 10, "Anna", "a" * 8192)]))
    code, out, err = _mnemobot(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert code == 0, err
    assert "imported 1 message " in out
    export.write_text(_export_json([_message(2, 11, "Anna", "b" * 8193)]))
    code, _, err = _mnemobot(workspace, "memory", "import", str(export), "--chat", CHAT)
    assert code == 2
    assert err.strip().splitlines() == [
        "mnemobot: result.json: messages[0].text: 8,193 characters, more than an imported "
        "message may hold (8,192); correct or remove the message"
    ]
