"""The protocols say what their callers use, and the real parts fit them: the channel's,
its reply stream's, its host's and the chat model's.

Nothing type-checks the package at run time: a member the dispatcher calls but the
protocol forgot (or a channel that lacks one the protocol declares) shows only when a user
reaches that path. These tests read the protocols member by member.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Any, Protocol

import pytest
from telegram import Bot

from mnemobot.bot import assembled_app
from mnemobot.bot.app import App
from mnemobot.bot.channels import dispatch, stop_command
from mnemobot.bot.channels.base import Channel, ChannelHost, ChannelReplyStream
from mnemobot.bot.channels.console.channel import ConsoleChannel
from mnemobot.bot.channels.telegram.channel import TelegramChannel
from mnemobot.bot.channels.telegram.preview import TelegramPreview
from mnemobot.bot.llm.client import OpenAIChatModel
from mnemobot.systems.core.llm import ChatModel


def protocol_members(protocol: type) -> dict[str, Any]:
    """Every member a protocol declares (its own and its parent protocols'), by name; a data
    member maps to None."""
    members: dict[str, Any] = {}
    for cls in reversed(protocol.__mro__):
        if cls in (object, Protocol) or not getattr(cls, "_is_protocol", False):
            continue
        for name in cls.__annotations__:
            members.setdefault(name, None)
        for name, value in vars(cls).items():
            if not name.startswith("_"):
                members[name] = value
    return members


def _kind(member: Any) -> str:
    if isinstance(member, property):
        return "a property"
    if inspect.iscoroutinefunction(member):
        return "an async method"
    if callable(member):
        return "a method"
    return "data"


def _parameters(function: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in list(inspect.signature(function).parameters.values())[1:]]


def misfits(protocol: type, part: object) -> list[str]:
    """How `part` (a class, or an instance for members set in `__init__`) fails `protocol`."""
    cls = part if isinstance(part, type) else type(part)
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    problems = []
    for name, declared in protocol_members(protocol).items():
        own = inspect.getattr_static(part, name, None)
        if own is None and name not in fields:
            problems.append(f"{cls.__name__} has no {name}")
            continue
        if declared is None or name in fields:
            continue
        wanted, got = _kind(declared), _kind(own)
        # A property may be met by a plain attribute, as a protocol allows.
        if wanted != got and not (wanted == "a property" and got == "data"):
            problems.append(f"{cls.__name__}.{name} is {got}, the protocol wants {wanted}")
        elif wanted.endswith("method") and _parameters(declared) != _parameters(own):
            problems.append(f"{cls.__name__}.{name} takes other parameters than the protocol")
    return problems


def _preview() -> TelegramPreview:
    return TelegramPreview(
        Bot("123:token"),
        chat_id=1,
        thread_id=None,
        quote=None,
        method="edit",
        interval_seconds=1.0,
        journal=None,
        key="telegram:1",
        receipts=(),
    )


@pytest.mark.parametrize("channel", [TelegramChannel, ConsoleChannel])
def test_each_channel_provides_every_member_of_the_channel_protocol(channel: type) -> None:
    assert misfits(Channel, channel) == []


def test_telegrams_preview_is_a_reply_stream_the_dispatcher_can_drive() -> None:
    assert misfits(ChannelReplyStream, _preview()) == []


def test_the_app_is_a_channel_host() -> None:
    assert misfits(ChannelHost, App) == []


def test_the_openai_client_is_a_chat_model_and_the_app_uses_only_what_the_protocol_says() -> None:
    assert misfits(ChatModel, OpenAIChatModel) == []
    # The app's own methods; the assembly may use more of the OpenAI client it made.
    used = _used_members(Path(inspect.getfile(assembled_app)), "llm", variables=False)
    assert "close" in used
    assert used - protocol_members(ChatModel).keys() == set()


def test_a_missing_member_is_found() -> None:
    class Mute:
        name = "mute"

        async def start(self) -> None: ...

        def send_text(self, job: object, text: str) -> None: ...

    problems = misfits(Channel, Mute)
    assert "Mute has no status_lines" in problems
    assert "Mute.send_text is a method, the protocol wants an async method" in problems


def _used_members(source: Path, owner: str, *, variables: bool = True) -> set[str]:
    """The names read on `self.<owner>`, or (with `variables`) on a variable called
    `<owner>`, in `source`."""
    used = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        if (variables and isinstance(base, ast.Name) and base.id == owner) or (
            isinstance(base, ast.Attribute)
            and base.attr == owner
            and isinstance(base.value, ast.Name)
            and base.value.id == "self"
        ):
            used.add(node.attr)
    return used


def test_what_the_dispatcher_uses_of_a_channel_and_a_stream_is_declared() -> None:
    # /stop (stop_command) drives the dispatcher's streams and channel too.
    sources = [Path(inspect.getfile(module)) for module in (dispatch, stop_command)]
    channel_uses = set().union(*(_used_members(source, "channel") for source in sources))
    stream_uses = set().union(*(_used_members(source, "stream") for source in sources))
    # The reading found the calls (a renamed variable would make this pass vacuously).
    assert {"send_reply", "status_lines", "send_document"} <= channel_uses
    assert {"request_stop", "latest"} <= stream_uses
    assert channel_uses - protocol_members(Channel).keys() == set()
    assert stream_uses - protocol_members(ChannelReplyStream).keys() == set()
