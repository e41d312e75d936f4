"""Scheduled times in the user's language: the pure wording of dates and intervals."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from mnemobot.bot.schedule.tasks import Schedule
from mnemobot.bot.schedule.timing import soon_in_english
from mnemobot.bot.schedule.wording import (
    local_confirmation,
    local_repeat,
    local_soon,
    local_when,
    locale_for,
)

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


def test_intervals_are_said_as_a_repeat_in_the_largest_whole_unit() -> None:
    russian = locale_for("ru")
    assert russian is not None
    assert local_repeat(Schedule(type="once", at=DUE), ZONE, russian) == ""
    assert local_repeat(Schedule(type="every", seconds=7200), ZONE, russian) == " 🔁 каждые 2 часа"
    assert local_repeat(Schedule(type="every", seconds=3600), ZONE, russian) == " 🔁 каждый час"
    assert local_repeat(Schedule(type="every", seconds=90), ZONE, russian) == " 🔁 каждые 90 секунд"
    weekly = Schedule(type="every", days=14, anchor=DUE)
    assert local_repeat(weekly, ZONE, russian) == " 🔁 каждые 2 недели в 09:00"
    daily = Schedule(type="every", days=3, anchor=DUE)
    assert local_repeat(daily, ZONE, russian) == " 🔁 каждые 3 дня в 09:00"


@pytest.mark.parametrize(
    ("days", "said"),
    [
        # Found live: "🔁 1 день · 08:30" reads as a duration of one day, not a repeat.
        (1, " 🔁 каждый день в 09:00"),
        (2, " 🔁 каждые 2 дня в 09:00"),
        (5, " 🔁 каждые 5 дней в 09:00"),
        (11, " 🔁 каждые 11 дней в 09:00"),
        (31, " 🔁 каждый 31 день в 09:00"),
        (22, " 🔁 каждые 22 дня в 09:00"),
        (7, " 🔁 каждую неделю в 09:00"),
        (35, " 🔁 каждые 5 недель в 09:00"),
    ],
)
def test_russian_says_every_n_days_in_the_form_the_number_takes(days: int, said: str) -> None:
    russian = locale_for("ru")
    assert russian is not None
    assert local_repeat(Schedule(type="every", days=days, anchor=DUE), ZONE, russian) == said


@pytest.mark.parametrize(
    ("language", "cron", "said"),
    [
        ("de", "30 8 * * *", "täglich um 08:30"),
        ("ru", "30 8 * * *", "каждый день в 08:30"),
        ("es", "30 8 * * *", "todos los días a las 8:30"),
        ("zh-hans", "30 8 * * *", "每天 08:30"),
        # Spanish says "a la 1:00", "a las 9:00".
        ("es", "0 1 * * *", "todos los días a la 1:00"),
        ("de", "0 9,18 * * *", "täglich um 09:00 und 18:00"),
        ("ru", "0 9,18 * * *", "каждый день в 09:00 и 18:00"),
        ("ru", "0 8 * * 1-5", "по будням в 08:00"),
        ("de", "0 8 * * MON-FRI", "werktags um 08:00"),
        ("es", "0 8 * * 1-5", "de lunes a viernes a las 8:00"),
        ("zh-hans", "0 8 * * 1-5", "每个工作日 08:00"),
        ("ru", "0 10 * * 6,0", "по выходным в 10:00"),
        ("de", "0 10 * * sat,sun", "am Wochenende um 10:00"),
        # One day of the week, in the gender of its name.
        ("ru", "0 8 * * 1", "каждый понедельник в 08:00"),
        ("ru", "0 8 * * 3", "каждую среду в 08:00"),
        ("ru", "0 8 * * 0", "каждое воскресенье в 08:00"),
        ("de", "0 8 * * 1", "jeden Montag um 08:00"),
        ("es", "0 8 * * 3", "todos los miércoles a las 8:00"),
        ("zh-hans", "0 8 * * 1", "每周一 08:00"),
        # Several days: the abbreviations of the date beside it, in the language's list.
        ("ru", "0 8 * * 1,3,5", "пн, ср и пт в 08:00"),
        ("de", "0 8 * * 1,3,5", "Mo., Mi. und Fr. um 08:00"),
        ("es", "0 8 * * 2-6", "mar–sáb a las 8:00"),
        ("zh-hans", "0 8 * * 1,3", "周一和周三 08:00"),
        # Found live: "🔁 1 Monat · 09:00" left out which day of the month.
        ("ru", "0 9 1 * *", "1-го числа каждого месяца в 09:00"),
        ("de", "0 9 15 * *", "am 15. jedes Monats um 09:00"),
        ("es", "0 9 1 * *", "el día 1 de cada mes a las 9:00"),
        ("zh-hans", "0 9 1 * *", "每月1日 09:00"),
        ("ru", "*/15 * * * *", "каждые 15 минут"),
        ("ru", "* * * * *", "каждую минуту"),
        ("ru", "0 * * * *", "каждый час"),
        ("ru", "0 */2 * * *", "каждые 2 часа"),
        ("de", "0 * * * *", "stündlich"),
        ("de", "0 */2 * * *", "alle 2 Stunden"),
        ("es", "0 * * * *", "cada hora"),
        ("es", "*/5 * * * *", "cada 5 minutos"),
        ("zh-hans", "0 */3 * * *", "每3小时"),
        # The second Monday, the last Friday, the last day of the month.
        ("ru", "0 8 * * 1#2", "во второй понедельник каждого месяца в 08:00"),
        ("ru", "0 17 * * L5", "в последнюю пятницу каждого месяца в 17:00"),
        ("de", "0 8 * * 1#1", "am ersten Montag jedes Monats um 08:00"),
        ("es", "0 9 L * *", "el último día de cada mes a las 9:00"),
        ("zh-hans", "0 9 * * 5#1", "每月第一个周五 09:00"),
        # Two nths of a weekday are no common shape: the expression, as given.
        ("ru", "0 8 * * 1#1,1#3", "0 8 * * 1#1,1#3"),
    ],
)
def test_a_cron_repeat_is_said_as_a_native_speaker_says_it(
    language: str, cron: str, said: str
) -> None:
    locale = locale_for(language)
    assert locale is not None
    assert local_repeat(Schedule(type="cron", cron=cron), ZONE, locale) == f" 🔁 {said}"


def test_a_language_without_a_catalog_reads_cldr_words_only() -> None:
    # No sentence of ours in French: the units and day names are CLDR's.
    french = locale_for("fr")
    assert french is not None

    def said(cron: str) -> str:
        return local_repeat(Schedule(type="cron", cron=cron), ZONE, french)

    # CLDR puts a no-break space between a number and its unit in French.
    assert said("30 8 * * *") == " 🔁 1\u00a0jour · 08:30"
    assert said("0 8 * * 1-5") == " 🔁 lun.–ven. · 08:00"
    assert said("*/15 * * * *") == " 🔁 15 minutes"
    assert local_repeat(Schedule(type="every", days=3, anchor=DUE), ZONE, french) == (
        " 🔁 3\u00a0jours · 09:00"
    )


def test_a_confirmation_has_no_english_word_in_it() -> None:
    spanish = locale_for("es")
    assert spanish is not None
    line = local_confirmation(
        4, "task", "resumir la semana", (DUE, ZONE, NOW), Schedule(type="once", at=DUE), spanish
    )
    assert line == "✅ #4 📋 vie, 27 de noviembre, 9:00 (Europe/Berlin): resumir la semana"


def test_when_a_repeat_comes_next_is_said_short() -> None:
    # NOW is Thursday 26 November 2026, 18:00 in Berlin.
    later_today = datetime(2026, 11, 26, 21, 30, tzinfo=ZoneInfo(ZONE)).timestamp()
    monday = datetime(2026, 11, 30, 8, 30, tzinfo=ZoneInfo(ZONE)).timestamp()
    far = datetime(2026, 12, 7, 8, 30, tzinfo=ZoneInfo(ZONE)).timestamp()
    next_year = datetime(2027, 1, 4, 8, 30, tzinfo=ZoneInfo(ZONE)).timestamp()
    assert [soon_in_english(ts, ZONE, NOW) for ts in (later_today, monday, far, next_year)] == [
        "21:30",
        "Mon 08:30",
        "Mon 7 Dec, 08:30",
        "Mon 4 Jan 2027, 08:30",
    ]
    russian = locale_for("ru")
    assert russian is not None
    assert [local_soon(ts, ZONE, NOW, russian) for ts in (later_today, monday, far)] == [
        "21:30",
        "пн 08:30",
        "пн, 7 дек., 08:30",
    ]
