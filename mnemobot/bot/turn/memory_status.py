"""What `/status` says of a chat's memory: its scope, items per layer, the last pack's size
and where the chat's files go."""

from __future__ import annotations

from mnemobot.bot.i18n import N_, words_for
from mnemobot.bot.turn.assistant import Assistant
from mnemobot.bot.turn.commands import StatusProvider
from mnemobot.memory.services.recall import MemoryRecall
from mnemobot.systems.core.context import ChatRef

# The memory layers by the names /status gives them.
_LAYERS = {"EPISODIC": N_("episodic"), "SEMANTIC": N_("semantic"), "PROCEDURAL": N_("procedural")}


def memory_status(assistant: Assistant, recall: MemoryRecall) -> StatusProvider:
    """The memory lines of a chat's `/status`."""

    def lines(chat: ChatRef) -> list[str]:
        words = words_for(chat.language)
        config = assistant.config()
        scope = assistant.scope_for(chat, config)
        if config.files.shared:
            files = words.gettext("Files: one folder shared by all chats (files.shared)")
        else:
            files = words.gettext("Files: this chat's own folder")
        if not recall.scopes.is_loaded(scope):
            # Loading a big scope takes a second: not on the event loop for a /status.
            return [
                words.gettext(
                    "Memory ({scope}): not loaded yet (read at this chat's next message)",
                    scope=scope,
                ),
                files,
            ]
        stats = recall.stats(scope)
        layers = ", ".join(
            f"{words.gettext(_LAYERS.get(layer, layer.lower()))} {words.number(count)}"
            for layer, count in stats.per_layer.items()
        )
        last = assistant.activity_for(chat).last_pack_tokens
        if last is not None:
            pack = words.ngettext("last pack {count} token", "last pack {count} tokens", last)
        else:
            pack = words.gettext("no pack built yet")
        if stats.skipped_lines:
            pack += words.ngettext(
                ", {count} corrupt line skipped",
                ", {count} corrupt lines skipped",
                stats.skipped_lines,
            )
        memory_line = words.gettext(
            "Memory ({scope}): {layers}; {pack}", scope=scope, layers=layers, pack=pack
        )
        return [memory_line, files]

    return lines
