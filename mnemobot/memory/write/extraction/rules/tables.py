"""The statement rule tables of the languages besides English, by language code.

English rules (`personal_rules`, `statements`) run on every sentence in Latin script;
these tables add what a sentence in another language says. A table is compiled the
first time a sentence in its language comes by (its patterns cost tens of
milliseconds to compile), so a bot that only ever hears English never pays for them.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module

from mnemobot.memory.write.extraction.language import (
    CHINESE,
    GERMAN,
    RUSSIAN,
    SPANISH,
    LanguageRules,
)
from mnemobot.memory.write.extraction.language import guess_language as guess_language

# Language code -> (module, name of its table).
_TABLES = {
    RUSSIAN: ("mnemobot.memory.write.extraction.rules.ru", "RUSSIAN_RULES"),
    CHINESE: ("mnemobot.memory.write.extraction.rules.zh", "CHINESE_RULES"),
    GERMAN: ("mnemobot.memory.write.extraction.rules.de", "GERMAN_RULES"),
    SPANISH: ("mnemobot.memory.write.extraction.rules.es", "SPANISH_RULES"),
}
LANGUAGES = frozenset(_TABLES)


@cache
def rules_of(language: str) -> LanguageRules | None:
    """The rule table of `language`; None for English and languages without one."""
    where = _TABLES.get(language)
    if where is None:
        return None
    table: LanguageRules = getattr(import_module(where[0]), where[1])
    return table


def rules_for(text: str) -> LanguageRules | None:
    """The rule table of the language `text` seems to be in; None for English."""
    return rules_of(guess_language(text))
