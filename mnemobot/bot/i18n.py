"""The bot's own words in the reader's language: gettext catalogs, English when there is none.

What the bot says by itself (/start, /help, /status, refusals, the command menu, reminders'
notes, apologies) is written in English in the code, marked for extraction (`gettext`,
`ngettext`, `N_` for a constant translated where it is used), and translated in
`locale/<language>/LC_MESSAGES/mnemobot.po`, compiled to the `.mo` beside it that the
package ships. What the model writes, and command names, are never translated.

The language is the reader's: Telegram's `language_code` of the sender ("ru", "pt-br",
"zh-hans"), the locale (`LANGUAGE`, `LC_ALL`, `LC_MESSAGES`, `LANG`) at the console. A
language without a catalog gets English. Updating the catalogs after changing a string:

    pybabel extract -o mnemobot/bot/locale/mnemobot.pot --no-location mnemobot
    pybabel update -i mnemobot/bot/locale/mnemobot.pot -d mnemobot/bot/locale -D mnemobot
    (translate the new entries, and clear the fuzzy mark of a changed one), then
    pybabel compile -d mnemobot/bot/locale -D mnemobot

`tests/test_bot_words.py` fails while a string of the code has no translation, a
placeholder or command name went missing in one, or a `.mo` is older than its `.po`.
"""

from __future__ import annotations

import gettext
import logging
import struct
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

DOMAIN = "mnemobot"
LOCALE_DIR = Path(__file__).with_name("locale")
SOURCE_LANGUAGE = "en"
# The languages with a catalog; every other language reads the English of the code.
TRANSLATED = ("ru", "de", "es", "zh")
LANGUAGES = (SOURCE_LANGUAGE, *TRANSLATED)


# How each language groups the digits of a whole number (CLDR's group separator, and the
# fewest digits that are grouped: Spanish writes 1234 but 12.345). A table, not Babel's
# format_decimal: importing babel.numbers and a locale's data took 300 ms on the event loop.
_GROUPING = {
    "en": (",", 4),
    "ru": ("\u00a0", 4),
    "de": (".", 4),
    "es": (".", 5),
    "zh": (",", 4),
}


def N_(message: str) -> str:
    """Marks a constant for extraction; it is translated where it is used (`gettext`)."""
    return message


def language_of(code: str | None) -> str:
    """The catalog for a language code ("ru", "pt-br", "zh-hans", "de_DE.UTF-8"): one of
    `LANGUAGES`, English when none fits. Chinese of any script reads the simplified one."""
    if not code:
        return SOURCE_LANGUAGE
    primary = code.strip().lower().replace("_", "-").split(".")[0].split("@")[0].split("-")[0]
    return primary if primary in TRANSLATED else SOURCE_LANGUAGE


def console_language(environ: Mapping[str, str]) -> str:
    """The console reader's language, as gettext finds it: `LANGUAGE` (a list, when the
    locale is not "C"), then `LC_ALL`, `LC_MESSAGES`, `LANG`; English when none is set."""
    locale = next(
        (environ[name] for name in ("LC_ALL", "LC_MESSAGES", "LANG") if environ.get(name)), ""
    )
    if locale.split(".")[0] in ("", "C", "POSIX"):
        return SOURCE_LANGUAGE
    for code in environ.get("LANGUAGE", "").split(":"):
        if code and language_of(code) != SOURCE_LANGUAGE:
            return language_of(code)
    return language_of(locale)


class Words:
    """The bot's words in one language. Strings use named placeholders (`{name}`), filled
    from the keyword arguments; `ngettext` fills `{count}` itself."""

    def __init__(self, language: str, catalog: gettext.NullTranslations) -> None:
        self.language = language
        self._catalog = catalog

    @property
    def translated(self) -> bool:
        """Whether these words are a catalog's, not the English of the code."""
        return self.language != SOURCE_LANGUAGE

    def gettext(self, message: str, /, **values: object) -> str:
        return self._filled(self._catalog.gettext(message), message, values)

    def ngettext(self, singular: str, plural: str, count: int, /, **values: object) -> str:
        """The form for `count` ("1 message", "2 messages"; Russian has three)."""
        values.setdefault("count", self.number(count))
        english = singular if count == 1 else plural
        return self._filled(self._catalog.ngettext(singular, plural, count), english, values)

    def number(self, value: int) -> str:
        """`12,345` in English, `12 345` in Russian, `12.345` in German."""
        separator, shortest = _GROUPING.get(self.language, (",", 4))
        digits = str(abs(value))
        if len(digits) >= shortest:
            digits = f"{int(digits):,}".replace(",", separator)
        return f"-{digits}" if value < 0 else digits

    def _filled(self, text: str, english: str, values: dict[str, object]) -> str:
        if not values:
            return text
        try:
            return text.format(**values)
        except (KeyError, IndexError, ValueError) as exc:
            # A catalog's slip (a misspelt placeholder) must not cost the user the answer.
            log.warning(
                "%s translation of %r is broken (%s); English used", self.language, english, exc
            )
            return english.format(**values)


@lru_cache(maxsize=len(LANGUAGES))
def _words(language: str) -> Words:
    if language == SOURCE_LANGUAGE:
        return Words(language, gettext.NullTranslations())
    path = LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.mo"
    try:
        with path.open("rb") as file:
            return Words(language, gettext.GNUTranslations(file))
    except (OSError, ValueError, struct.error) as exc:
        # Missing or not a catalog (OSError), cut short (struct.error), or a bad charset or
        # plural rule (ValueError).
        log.warning("no %s catalog (%s): the bot answers in English", language, exc)
        return Words(SOURCE_LANGUAGE, gettext.NullTranslations())


def words_for(code: str | None) -> Words:
    """The words for a language code (Telegram's `language_code`, a locale name)."""
    return _words(language_of(code))
