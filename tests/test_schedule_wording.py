"""Scheduled times in the user's language: the pure wording of dates and intervals."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from mnemobot.bot.schedule.tasks import Schedule
from mnemobot.bot.schedule.wording import (
    local_confirmation,
    local_repeat,
    local_when,
    locale_for,
)

if TYPE_CHECKING:
    from babel import Locale

ZONE = "Europe/Berlin"
DUE = datetime(2026, 11, 27, 9, 0, tzinfo=ZoneInfo(ZONE)).timestamp()
NOW = datetime(2026, 11, 26, 18, 0, tzinfo=ZoneInfo(ZONE)).timestamp()


def test_english_unknown_and_missing_languages_keep_the_english_lines() -> None:
    assert locale_for("en") is None
    assert locale_for("en-gb") is None
    assert locale_for(None) is None
    assert locale_for("") is None
    assert locale_for("xx-nonsense") is None


def test_telegram_language_codes_with_regions_and_scripts_are_understood() -> None:
    assert str(locale_for("pt-br")) == "pt_BR"
    assert str(locale_for("zh-hans")) == "zh_Hans"
    assert str(locale_for("ru")) == "ru"


def test_the_date_is_said_as_the_language_says_it() -> None:
    russian = locale_for("ru")
    german = locale_for("de")
    chinese = locale_for("zh-hans")
    assert russian is not None and german is not None and chinese is not None
    assert local_when(DUE, ZONE, NOW, russian) == "пт, 27 ноября, 09:00 (Europe/Berlin)"
    assert local_when(DUE, ZONE, NOW, german) == "Fr., 27. November, 09:00 (Europe/Berlin)"
    assert local_when(DUE, ZONE, NOW, chinese) == "11月27日周五, 09:00 (Europe/Berlin)"


def test_the_year_is_said_only_when_it_is_not_this_year() -> None:
    russian = locale_for("ru")
    assert russian is not None
    last_year = datetime(2025, 12, 31, 12, 0, tzinfo=ZoneInfo(ZONE)).timestamp()
    assert "2026" in local_when(DUE, ZONE, last_year, russian)
    assert "2026" not in local_when(DUE, ZONE, NOW, russian)


def test_intervals_are_said_in_the_largest_whole_unit() -> None:
    russian = locale_for("ru")
    assert russian is not None
    assert local_repeat(Schedule(type="once", at=DUE), ZONE, russian) == ""
    assert local_repeat(Schedule(type="every", seconds=7200), ZONE, russian) == " 🔁 2 часа"
    assert local_repeat(Schedule(type="every", seconds=90), ZONE, russian) == " 🔁 90 секунд"
    weekly = Schedule(type="every", days=14, anchor=DUE)
    assert local_repeat(weekly, ZONE, russian) == " 🔁 2 недели · 09:00"
    daily = Schedule(type="every", days=3, anchor=DUE)
    assert local_repeat(daily, ZONE, russian) == " 🔁 3 дня · 09:00"


def test_a_confirmation_has_no_english_word_in_it() -> None:
    spanish = locale_for("es")
    assert spanish is not None
    line = local_confirmation(
        4, "task", "resumir la semana", (DUE, ZONE, NOW), Schedule(type="once", at=DUE), spanish
    )
    assert line == "✅ #4 📋 vie, 27 de noviembre, 9:00 (Europe/Berlin): resumir la semana"


def test_common_cron_shapes_are_said_with_cldr_words_and_others_as_written() -> None:
    russian = locale_for("ru")
    chinese = locale_for("zh-hans")
    assert russian is not None and chinese is not None

    def said(cron: str, locale: Locale = russian) -> str:
        return local_repeat(Schedule(type="cron", cron=cron), ZONE, locale)

    # Every day at 08:30 reads as the 1-day interval does.
    assert said("30 8 * * *") == " 🔁 1 день · 08:30"
    one_day = Schedule(type="every", days=1, anchor=DUE)
    assert said("0 9 * * *") == local_repeat(one_day, ZONE, russian) == " 🔁 1 день · 09:00"
    assert said("0 9,18 * * *") == " 🔁 1 день · 09:00, 18:00"
    assert said("0 8 * * 1-5") == " 🔁 пн–пт · 08:00"
    assert said("0 8 * * MON-FRI") == " 🔁 пн–пт · 08:00"
    assert said("0 8 * * 1,3,5") == " 🔁 пн, ср, пт · 08:00"
    assert said("0 8 * * 1", chinese) == " 🔁 周一 · 08:00"
    assert said("0 9 1 * *") == " 🔁 1 месяц · 09:00"
    assert said("*/15 * * * *") == " 🔁 15 минут"
    assert said("0 */2 * * *") == " 🔁 2 часа"
    # The second Monday of the month is no common shape: the expression, as the user gave it.
    assert said("0 8 * * 1#2") == " 🔁 0 8 * * 1#2"
