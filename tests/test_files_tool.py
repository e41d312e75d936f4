"""The files tool works inside the chat's own folder under `<workspace>/files/` and refuses
every way out, into the workspace or into another chat's folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mnemobot.bot.tools.files_tool import FilesTool
from mnemobot.bot.tools.registry import ToolRegistry
from mnemobot.config.runtime import RuntimeConfig
from mnemobot.systems.core.context import ChatRef, TurnContext
from mnemobot.systems.core.tool_runner import ToolError
from tests.conftest import turn_context


@pytest.fixture
def files_root(tmp_path: Path) -> Path:
    """The folder of the chat `turn_context()` speaks in."""
    root = tmp_path / "workspace" / "files" / "console:local"
    root.mkdir(parents=True)
    return root


@pytest.fixture
def registry(files_root: Path) -> ToolRegistry:
    return ToolRegistry([FilesTool(files_root.parent).tool()])


def chat_context(chat_id: str, config: RuntimeConfig | None = None) -> TurnContext:
    ctx = turn_context(config)
    ctx.chat = ChatRef("telegram", chat_id)
    ctx.scope = f"telegram:{chat_id}"
    return ctx


@pytest.mark.parametrize(
    "path",
    [
        "b-notes.txt",
        "../telegram:43/b-notes.txt",
        "../telegram:43",
        "/work/files/telegram:43/b-notes.txt",
        "link-to-43/b-notes.txt",
    ],
)
async def test_one_chat_cannot_see_another_chats_files(
    registry: ToolRegistry, files_root: Path, path: str
) -> None:
    chat_43, chat_42 = chat_context("43"), chat_context("42")
    await registry.run(
        "files",
        '{"operation": "write", "path": "b-notes.txt", "content": "password hunter2"}',
        chat_43,
    )
    own_42 = files_root.parent / "telegram:42"
    own_42.mkdir()
    (own_42 / "link-to-43").symlink_to(files_root.parent / "telegram:43")
    assert "b-notes" not in await registry.run("files", '{"operation": "list"}', chat_42)
    for operation in ("read", "list"):
        try:
            answer = await registry.run(
                "files", json.dumps({"operation": operation, "path": path}), chat_42
            )
        except ToolError as refused:
            answer = str(refused)
        assert "hunter2" not in answer and "b-notes (" not in answer


async def test_a_shared_folder_is_the_operators_choice(
    registry: ToolRegistry, files_root: Path
) -> None:
    shared = RuntimeConfig.model_validate({"files": {"shared": True}})
    await registry.run(
        "files",
        '{"operation": "write", "path": "team.txt", "content": "for everyone"}',
        chat_context("43", shared),
    )
    read = '{"operation": "read", "path": "team.txt"}'
    assert await registry.run("files", read, chat_context("42", shared)) == "for everyone"
    with pytest.raises(ToolError, match="no file"):
        await registry.run("files", read, chat_context("42"))


async def test_write_read_and_list(registry: ToolRegistry, files_root: Path) -> None:
    written = await registry.run(
        "files",
        '{"operation": "write", "path": "notes/todo.txt", "content": "buy milk"}',
        turn_context(),
    )
    assert "wrote 8 characters" in written
    assert (files_root / "notes" / "todo.txt").read_text() == "buy milk"
    assert await registry.run(
        "files", '{"operation": "read", "path": "notes/todo.txt"}', turn_context()
    ) == ("buy milk")
    assert "notes/" in await registry.run("files", '{"operation": "list"}', turn_context())


async def test_reading_a_large_file_pages(registry: ToolRegistry, files_root: Path) -> None:
    (files_root / "big.txt").write_text("a" * 25_000 + "END")
    first = await registry.run("files", '{"operation": "read", "path": "big.txt"}', turn_context())
    assert "read again with offset=20000" in first
    second = await registry.run(
        "files", '{"operation": "read", "path": "big.txt", "offset": 20000}', turn_context()
    )
    assert second.endswith("END")


@pytest.mark.parametrize(
    "path",
    ["../secret.txt", "notes/../../secret.txt", "/etc/passwd", "~/secret.txt", "a/../../x"],
)
async def test_escapes_by_dotdot_or_absolute_path_are_refused(
    registry: ToolRegistry, files_root: Path, path: str
) -> None:
    (files_root.parent / "secret.txt").write_text("top secret")
    for operation in ("read", "write", "list"):
        with pytest.raises(ToolError, match="refused"):
            await registry.run(
                "files",
                f'{{"operation": "{operation}", "path": "{path}", "content": "pwned"}}',
                turn_context(),
            )
    assert (files_root.parent / "secret.txt").read_text() == "top secret"


async def test_symlinks_pointing_outside_are_refused(
    registry: ToolRegistry, files_root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    os.symlink(outside, files_root / "link")
    os.symlink(outside / "secret.txt", files_root / "file-link")
    with pytest.raises(ToolError, match="outside the files folder"):
        await registry.run(
            "files", '{"operation": "read", "path": "link/secret.txt"}', turn_context()
        )
    with pytest.raises(ToolError, match="outside the files folder"):
        await registry.run(
            "files",
            '{"operation": "write", "path": "file-link", "content": "pwned"}',
            turn_context(),
        )
    assert (outside / "secret.txt").read_text() == "top secret"


async def test_bad_arguments_are_tool_errors(registry: ToolRegistry) -> None:
    with pytest.raises(ToolError, match="not valid JSON"):
        await registry.run("files", '{"operation": "read", ', turn_context())
    with pytest.raises(ToolError, match="operation"):
        await registry.run("files", '{"operation": "delete"}', turn_context())
    with pytest.raises(ToolError, match="unknown tool 'rm'"):
        await registry.run("rm", "{}", turn_context())


async def test_file_system_errors_name_the_relative_path_only(
    registry: ToolRegistry, files_root: Path
) -> None:
    (files_root / "notes.txt").write_text("a file, not a folder")
    for path in ("notes.txt/inside.txt", "notes.txt/deeper/inside.txt"):
        with pytest.raises(ToolError) as refused:
            await registry.run(
                "files",
                f'{{"operation": "write", "path": "{path}", "content": "x"}}',
                turn_context(),
            )
        message = str(refused.value)
        assert message.startswith(f"could not write {path!r}: ")
        # The model may repeat a tool error in chat: no absolute path in it.
        assert str(files_root.parent) not in message
