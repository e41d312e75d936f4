"""What `/status` says of a chat's memory: its scope, items per layer, the last pack's size
and where the chat's files go."""

from __future__ import annotations

from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.commands import StatusProvider
from mnemobot.memory.services.recall import MemoryRecall
from mnemobot.systems.context import ChatRef


def memory_status(assistant: Assistant, recall: MemoryRecall) -> StatusProvider:
    """The memory lines of a chat's `/status`."""

    def lines(chat: ChatRef) -> list[str]:
        config = assistant.config()
        scope = assistant.scope_for(chat, config)
        files = (
            "one folder shared by all chats (files.shared)"
            if config.files.shared
            else "this chat's own folder"
        )
        if not recall.scopes.is_loaded(scope):
            # Loading a big scope takes a second: not on the event loop for a /status.
            return [
                f"Memory ({scope}): not loaded yet (read at this chat's next message)",
                f"Files: {files}",
            ]
        stats = recall.stats(scope)
        layers = ", ".join(f"{layer.lower()} {count}" for layer, count in stats.per_layer.items())
        last = assistant.activity_for(chat).last_pack_tokens
        pack = f"last pack {last} tokens" if last is not None else "no pack built yet"
        skipped = f", {stats.skipped_lines} corrupt lines skipped" if stats.skipped_lines else ""
        return [f"Memory ({scope}): {layers}; {pack}{skipped}", f"Files: {files}"]

    return lines
