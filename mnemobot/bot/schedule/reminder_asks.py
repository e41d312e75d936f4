"""A reminder asked for on a model server that drops tools: the reply says none was set.

Such a server answers "Remind me in 5 minutes to call mom" with the model's text alone,
which may well be "Sure, I will remind you!": nothing was scheduled, and the user learns
it only when no reminder comes. `/tools` and `/reminders` say it, but nobody asks them
first; the reply to the request itself now carries one line that says it (`dropped_tool_note`).

Whether a message asks for a reminder is read from its words (`asks_for_reminder`), in the
languages the bot has words for, and conservatively: a missing note costs what it did
before, a false one puzzles. "Remind me what we said" asks the memory, not the clock, so a
question word right after "remind me" ("напомни, о чём", "recuérdame qué", "提醒我…什么")
makes it no request.
"""

from __future__ import annotations

import re

from mnemobot.bot.i18n import N_

# What the chat reads under the model's reply (the fixes the operator's log and
# docs/local-models.md name).
REMINDERS_OFF = N_(
    "⚠️ No reminder was set: this bot's model server drops tools, so reminders cannot be "
    "set here. The bot's operator can fix it: llama-server with --jinja, llama-cpp-python "
    "with --chat_format chatml-function-calling, or a model whose template has tools."
)

# Asking to be reminded: the verb aimed at the speaker, in each language.
_ASK = re.compile(
    r"\bremind\s+(?:me|us)\b"
    r"|\b(?:напомни|напомните|напомнишь|напомнить)\b"
    r"|\b(?:erinnere?|erinnert|erinnern\s+sie)\s+(?:mich|uns)\b"
    r"|\b(?:mich|uns)\b[^.?!]{0,60}?\berinnern\b"
    r"|\brecu[eé]rd(?:a|e)(?:me|nos)\b|\b(?:me|nos)\s+(?:puedes\s+)?recordar(?:[aá]s)?\b"
    r"|提醒(?:我|我们|一下)",
    re.IGNORECASE,
)
# A reminder named as a thing to set: "set a reminder", "поставь напоминание", "stell mir
# eine Erinnerung" (not "stell dir vor, ich habe keine Erinnerung daran").
_NOUN = re.compile(
    r"\b(?:set|add|create|make|schedule|put)\s+(?:up\s+)?(?:me\s+)?(?:a|an|one|another)\s+"
    r"reminder\b"
    r"|\b(?:постав|установ|созда|сдела|завед|добав)\w*\s+(?:мне\s+|нам\s+)?напоминани\w*"
    r"|\b(?:stell|setz|leg|erstell)\w*\s+(?:mir\s+|uns\s+|bitte\s+)*(?:eine|ne)\s+erinnerung\b"
    r"|\berinnerung\b[^.?!]{0,40}\b(?:stellen|setzen|erstellen|anlegen)\b"
    r"|\b(?:pon|cr[eé]a|config[uú]ra|progr[aá]ma|añ[aá]de|agr[eé]ga)(?:me|nos)?\s+(?:un|otro)\s+"
    r"recordatorio\b"
    r"|(?:设|设置|定|定个|加)(?:一个|个)?提醒",
    re.IGNORECASE,
)
# Before the German verb, the speaker as its subject: "ich erinnere mich" is "I remember".
_GERMAN_SUBJECT = re.compile(r"\b(?:ich|wir)\b", re.IGNORECASE)
# Words that may stand between the verb and what it asks ("напомни, пожалуйста, о чём").
_FILLER = (
    r"(?:[\s,:]*(?:again|please|ещё|еще|раз|мне|нам|пожалуйста|noch\s*mal|bitte|daran"
    r"|otra\s+vez|por\s+favor)\b)*"
)
# Then the words of a question about the past: asking the memory, not the clock.
_QUESTION = re.compile(
    _FILLER + r"[\s,:]*"
    r"(?:what|who|whom|whose|where|which|how|why|whether|if|when|of|about\s+(?:what|who|"
    r"where|which|how|why|when|our|the\s+(?:conversation|chat))"
    r"|что|о\s+ч[её]м|про\s+что|как|кто|кого|где|когда|какой|какая|какое|какие|каким|сколько"
    r"|зачем|почему|ли"
    r"|was|wer|wen|wem|wo|wie|warum|welche\w*|ob|wann|woran|wor[üu]ber"
    r"|qu[eé]\s+(?:dijimos|dije|dijiste|hablamos)|qué|quién|quien|dónde|donde|cómo|como"
    r"|cuál|cual|cuándo|cuando|cuánto|por\s+qué|de\s+qu[eé]|lo\s+que|sobre\s+qu[eé])\b",
    re.IGNORECASE,
)
# A time to be reminded at, after the question words: "Remind me of the dentist tomorrow
# at 9", "remind me when the meeting starts at 10" ask the clock (review).
_WHEN_AHEAD = re.compile(
    r"\b(?:tomorrow|tonight|in\s+(?:\d+|an?|one|half\s+an?|a\s+few)\s+(?:min(?:ute)?s?"
    r"|hours?|days?|weeks?)|at\s+\d{1,2}(?::\d{2})?\b(?!\d)|\d{1,2}(?::\d{2})?\s*(?:am|pm)"
    r"|завтра|через\s+\w+|в\s+\d{1,2}(?::\d{2})?\b(?!\d)"
    r"|morgen|um\s+\d|in\s+\d+\s+(?:minuten|stunden|tagen)"
    r"|mañana|a\s+las?\s+\d|en\s+\d+\s+(?:minutos|horas|días))\b",
    re.IGNORECASE,
)
# Chinese asks with a question word anywhere in the sentence; "几分钟后" is "in a few
# minutes", no question.
_CHINESE_QUESTION = re.compile(r"什么|啥|谁|哪|怎么|为什么|多少|几(?!分钟|个?小时|天|秒)")


def asks_for_reminder(text: str) -> bool:
    """Whether `text` asks to be reminded (or names a reminder to set), not what was said."""
    if _NOUN.search(text):
        return True
    for found in _ASK.finditer(text):
        said = found.group().lower()
        if said.startswith("提醒"):
            if not _CHINESE_QUESTION.search(text):
                return True
            continue
        before = re.split(r"[.?!\n]", text[: found.start()])[-1]
        if ("mich" in said or "uns" in said) and _GERMAN_SUBJECT.search(before + said):
            continue
        after = text[found.end() :]
        if not _QUESTION.match(after) or _WHEN_AHEAD.search(after):
            return True
    return False
