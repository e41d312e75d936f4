"""The `files` tool: read, write and list files in the chat's own folder, and nowhere else.

Each memory scope has its folder, `<workspace>/files/<scope>/` (a chat, or `global` when
memory is shared): what one chat's model writes, another chat's model can neither list nor
read, whatever path it tries. With `files.shared` the operator chooses one folder,
`<workspace>/files/shared/`, for all chats.

In a group, writing over a file that is there is for those `permissions.editMemory` names
(`may_edit`): a member could otherwise replace what the others keep. A new file is
everyone's to write, like what they say.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemobot.base.atomic_file import write_atomic
from mnemobot.bot.i18n import N_
from mnemobot.bot.tools.edit_guard import EditRefusal, check_may_edit
from mnemobot.memory.store.scope_paths import validate_scope_key
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import Tool, ToolError

READ_PAGE_CHARS = 20_000
MAX_WRITE_CHARS = 1_000_000
MAX_LIST_ENTRIES = 200


def resolve_inside(root: Path, relative: str) -> Path:
    """The real path of `relative` under `root`; refuses anything that would leave `root`.

    Absolute paths and `..` are refused outright; symlinks are resolved, so a link that
    points outside is refused as well.
    """
    if not relative or relative.strip() in {".", "./"}:
        return root.resolve()
    if "\x00" in relative:
        raise ToolError("the path contains a NUL byte")
    if os.path.isabs(relative) or relative.startswith("~"):
        raise ToolError(f"refused {relative!r}: use a path relative to the files folder")
    if ".." in Path(relative).parts:
        raise ToolError(f"refused {relative!r}: '..' may not be used to leave the files folder")
    real_root = root.resolve()
    candidate = (real_root / relative).resolve()
    if candidate != real_root and real_root not in candidate.parents:
        raise ToolError(f"refused {relative!r}: it leads outside the files folder")
    return candidate


class FilesArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operation: Literal["read", "write", "list"]
    path: str = Field("", description="Path relative to the files folder.")
    content: str | None = Field(None, description="Text to write (operation=write).")
    offset: int = Field(0, ge=0, description="Character offset to read from (operation=read).")


SHARED_FOLDER = "shared"
# Where the files people send a chat are kept, inside its files folder.
RECEIVED_FOLDER = "received"
_NOT_IN_A_NAME = re.compile(r"[^\w.-]+")


def shared_received_folder(scope: str) -> str:
    """A chat's received files inside the folder every chat shares: `received/<scope>`
    ("telegram:-4001" as "telegram_-4001", a name every file system takes). Telegram
    numbers messages per chat: in one `received/`, two chats' message 9006 were one file
    (found live: one user's report replaced another's)."""
    return f"{RECEIVED_FOLDER}/{_NOT_IN_A_NAME.sub('_', scope)}"


def files_folder(root: Path, ctx: TurnContext) -> Path:
    """The folder the files tool works in for this turn's chat."""
    if ctx.config.files.shared:
        return root / SHARED_FOLDER
    return root / validate_scope_key(ctx.scope)


class FilesTool:
    def __init__(self, root: Path, *, may_edit: EditRefusal | None = None) -> None:
        """`may_edit(chat)`: why its user may not write over its files (None: may)."""
        self.root = root
        self.may_edit = may_edit

    def tool(self) -> Tool:
        return Tool(
            name="files",
            description=(
                "Read, write or list text files in your workspace files folder. Paths are "
                "relative to that folder; reads return at most "
                f"{READ_PAGE_CHARS} characters from `offset`."
            ),
            arguments=FilesArguments,
            handler=self.handle,
            status=N_("📄 working with files…"),
        )

    async def handle(self, arguments: FilesArguments, ctx: TurnContext) -> str:
        """The disk work runs in a worker thread; the permission check (which may ask the
        channel who administers the group) here."""
        replacing = arguments.operation == "write" and self.may_edit is not None
        if replacing and await asyncio.to_thread(self._is_file, arguments.path, ctx):
            what = f"write over {arguments.path!r}, a file kept here (a new name is fine)"
            await check_may_edit(self.may_edit, ctx, what)
        return await asyncio.to_thread(self._handle, arguments, ctx)

    def _is_file(self, path: str, ctx: TurnContext) -> bool:
        """Whether `path` names a file that is there (a bad path is the write's to refuse)."""
        try:
            return resolve_inside(files_folder(self.root, ctx), path).is_file()
        except (ToolError, OSError):
            return False

    def _handle(self, arguments: FilesArguments, ctx: TurnContext) -> str:
        try:
            folder = files_folder(self.root, ctx)
            folder.mkdir(parents=True, exist_ok=True)
            target = resolve_inside(folder, arguments.path)
            if arguments.operation == "list":
                return self._list(target, arguments.path)
            if arguments.operation == "read":
                return self._read(target, arguments.path, arguments.offset)
            return self._write(target, arguments.path, arguments.content)
        except OSError as exc:
            # The OS message names the absolute path, which the model may repeat in chat:
            # say what failed in terms of the path it asked for.
            reason = exc.strerror or type(exc).__name__
            shown = arguments.path or "."
            raise ToolError(f"could not {arguments.operation} {shown!r}: {reason}") from None

    def _list(self, target: Path, shown: str) -> str:
        if not target.is_dir():
            raise ToolError(f"{shown or '.'} is not a folder")
        entries = sorted(target.iterdir(), key=lambda p: p.name)
        lines = [
            f"{entry.name}/" if entry.is_dir() else f"{entry.name} ({entry.stat().st_size} bytes)"
            for entry in entries[:MAX_LIST_ENTRIES]
        ]
        if len(entries) > MAX_LIST_ENTRIES:
            lines.append(f"... and {len(entries) - MAX_LIST_ENTRIES} more")
        return "\n".join(lines) or "(empty folder)"

    def _read(self, target: Path, shown: str, offset: int) -> str:
        if not target.is_file():
            raise ToolError(f"no file {shown!r}; use operation=list to see what exists")
        text = target.read_bytes().decode("utf-8", errors="replace")
        page = text[offset : offset + READ_PAGE_CHARS]
        end = offset + len(page)
        if end < len(text):
            page += f"\n[... {len(text) - end} more characters; read again with offset={end}]"
        return page

    def _write(self, target: Path, shown: str, content: str | None) -> str:
        if content is None:
            raise ToolError("operation=write needs `content`")
        if len(content) > MAX_WRITE_CHARS:
            raise ToolError(f"content is too large (max {MAX_WRITE_CHARS} characters)")
        if target.is_dir():
            raise ToolError(f"{shown!r} is a folder")
        write_atomic(target, content.encode())
        return f"wrote {len(content)} characters to {shown}"
