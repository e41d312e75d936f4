"""The tool loop's own lines to the user (`LoopNote`), in the reader's language."""

from __future__ import annotations

from mnemobot.bot.i18n import words_for
from mnemobot.systems.core.llm import AnswerCap
from mnemobot.systems.model_call.loop_notes import LoopNote


def _count(value: object) -> int:
    """The count a plural form is chosen by. A fraction reads as the form for 2: English
    "1.5 seconds", Russian "1,5 секунды" (CLDR's form for fractions there)."""
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 2


def loop_note(language: str | None, note: LoopNote, /, **fields: object) -> str:
    """`note` in the words of a reader of `language` (`LoopNotes`)."""
    words = words_for(language)
    limit = fields.get("limit")
    match note:
        case LoopNote.STOPPED:
            return words.gettext(
                "I stopped before finishing because {why}. Ask me to continue if you want me "
                "to go on.",
                **fields,
            )
        case LoopNote.LLM_CALL_LIMIT:
            return words.ngettext(
                "it reached the limit of {count} model call (toolLoop.maxLlmCalls)",
                "it reached the limit of {count} model calls (toolLoop.maxLlmCalls)",
                _count(limit),
            )
        case LoopNote.TOOL_RUN_LIMIT:
            return words.ngettext(
                "it reached the limit of {count} tool run",
                "it reached the limit of {count} tool runs",
                _count(limit),
            )
        case LoopNote.TOOL_TIME_SPENT:
            seconds = fields.get("seconds")
            shown = f"{seconds:g}" if isinstance(seconds, float) else str(seconds)
            return words.ngettext(
                "its tools took the {seconds} second one turn may spend on them",
                "its tools took the {seconds} seconds one turn may spend on them",
                _count(seconds),
                seconds=shown,
            )
        case LoopNote.TOOL_TAKEN_AWAY:
            return words.gettext("(I could not use the {name} tool: {error})", **fields)
        case LoopNote.CUT_ANSWER:
            return words.gettext(
                "the model stopped before the end of this answer: it reached its length limit "
                '({limit}); say "go on" for the rest',
                **fields,
            )
        case LoopNote.ANSWER_CAP:
            cap = fields.get("cap")
            if not isinstance(cap, AnswerCap):
                return words.gettext("llm.maxOutputTokens, or the end of its context window")
            tokens = words.number(cap.tokens)
            window = words.number(cap.window or 0)
            if cap.by == "setting":
                return words.gettext("llm.maxOutputTokens, {tokens} tokens", tokens=tokens)
            if cap.by == "unknown window":
                return words.gettext(
                    "{tokens} tokens, the most an answer from a server on this machine or "
                    "network asks for until the server says its context window",
                    tokens=tokens,
                )
            if cap.by == "window share":
                return words.gettext(
                    "{tokens} tokens, a quarter of the model's {window}-token window",
                    tokens=tokens,
                    window=window,
                )
            return words.gettext(
                "{tokens} tokens, what the model's {window}-token window left",
                tokens=tokens,
                window=window,
            )
        case LoopNote.UNSAID_LIMIT:
            return words.gettext("llm.maxOutputTokens, or the end of its context window")
        case LoopNote.CUT_MESSAGE:
            return words.ngettext(
                "Your message ({count} character) is more than this model can read at once, "
                "so it was shown its beginning and its end; the whole message is kept in our "
                "conversation and in memory.",
                "Your message ({count} characters) is more than this model can read at once, "
                "so it was shown its beginning and its end; the whole message is kept in our "
                "conversation and in memory.",
                _count(fields.get("chars")),
            )
        case LoopNote.EMPTY_ANSWER:
            return words.gettext("(the model returned an empty answer)")
        case LoopNote.STOPPED_MARK:
            # The systems layer's STOPPED_MARK, as the catalogs know it.
            return words.gettext("⏹ Stopped.")
        case LoopNote.TIMED_OUT_MARK:
            return words.gettext(
                '⏱ The model did not finish this answer in time; say "go on" for the rest.'
            )
