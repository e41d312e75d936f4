"""The statement rule tables of the languages besides English, by language code.

English rules (`personal_rules`, `statements`) run on every sentence in Latin script;
these tables add what a sentence in another language says.
"""

from __future__ import annotations

from memory.extraction.language import CHINESE, GERMAN, RUSSIAN, SPANISH, LanguageRules
from memory.extraction.language import guess_language as guess_language
from memory.extraction.rules_de import GERMAN_RULES
from memory.extraction.rules_es import SPANISH_RULES
from memory.extraction.rules_ru import RUSSIAN_RULES
from memory.extraction.rules_zh import CHINESE_RULES

RULES_BY_LANGUAGE: dict[str, LanguageRules] = {
    RUSSIAN: RUSSIAN_RULES,
    CHINESE: CHINESE_RULES,
    GERMAN: GERMAN_RULES,
    SPANISH: SPANISH_RULES,
}
# Languages whose script English rules cannot read at all (they are skipped for them).
NON_LATIN = frozenset({RUSSIAN, CHINESE})


def rules_for(text: str) -> LanguageRules | None:
    """The rule table of the language `text` seems to be in; None for English."""
    return RULES_BY_LANGUAGE.get(guess_language(text))
