"""Received files: where a chat keeps what people send it, and under which name.

Every file a message carries is kept in the chat's files folder (`received/`), also when
it could not be read, so /retry and the files tool find it again. Apart from reading the
file for the turn (`media_turn`): a name that stays inside its folder whatever the
sender called the file is a rule of its own, with its own tests.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path, PurePath

from mnemobot.bot.channels.telegram.inbound import FileRef, Inbound
from mnemobot.bot.tools.files_tool import RECEIVED_FOLDER as RECEIVED_FOLDER

EXTENSIONS = {"voice": ".ogg", "video_note": ".mp4", "photo": ".jpg", "video": ".mp4"}
SAFE_NAME = re.compile(r"[^\w.\-]+")


def safe_file_name(name: str) -> str:
    """A file name that stays inside its folder (no path, no odd characters)."""
    base = PurePath(name.replace("\\", "/")).name
    cleaned = SAFE_NAME.sub("_", base).strip("._") or "file"
    return cleaned[:120]


def received_file_name(inbound: Inbound, file: FileRef) -> str:
    """The name a received file is kept under in the chat's `received/` folder."""
    if file.name:
        return f"{inbound.message_id}-{safe_file_name(file.name)}"
    extension = EXTENSIONS.get(file.kind, ".bin")
    if file.kind == "audio" and file.mime_type:
        extension = "." + file.mime_type.rsplit("/", 1)[-1]
    return f"{file.kind.replace('_', '-')}-{inbound.message_id}{extension}"


async def kept_file(folder: Path, kept: str | None) -> bytes | None:
    """A file kept earlier (/retry reads it again), or None to fetch it."""
    if kept is None:
        return None
    try:
        return await asyncio.to_thread((folder / kept).read_bytes)
    except OSError:
        return None
