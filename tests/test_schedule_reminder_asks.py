"""Whether a message asks for a reminder, read from its words (`asks_for_reminder`): what a
reply on a model server that drops tools adds its note to."""

from __future__ import annotations

import pytest

from mnemobot.bot.schedule.reminder_asks import asks_for_reminder

ASKS = [
    "Remind me in 5 minutes to call mom",
    "can you remind me tomorrow at 9 to water the plants?",
    "remind me about the dentist on Friday",
    "Please set a reminder for 8am",
    "remind us every Monday to send the report",
    "Напомни через 5 минут позвонить маме",
    "напомни мне завтра в 9 про встречу",
    "Поставь напоминание на 8 утра",
    "Напомните, пожалуйста, через час выключить духовку",
    "Erinnere mich in 5 Minuten daran, Mama anzurufen",
    "Kannst du mich morgen um 9 an den Zahnarzt erinnern?",
    "Stell mir eine Erinnerung für 8 Uhr",
    "Erinnern Sie mich bitte in einer Stunde",
    "Recuérdame en 5 minutos llamar a mamá",
    "recuerdame que llame a mamá mañana",
    "¿Me puedes recordar a las 9 la reunión?",
    "Pon un recordatorio para las 8",
    "5分钟后提醒我给妈妈打电话",
    "每天早上8点提醒我吃药",
    "帮我设个提醒，明天9点开会",
    "能提醒我明天开会吗",
    "Add a reminder: dentist, Friday at 10",
    "Создай мне напоминание на пятницу",
    "Kannst du eine Erinnerung für morgen 9 Uhr erstellen?",
    "Créame un recordatorio para mañana",
    "Ponme un recordatorio a las 7",
    # A question word, then a time to be reminded at (review).
    "Remind me of the dentist appointment tomorrow at 9",
    "Remind me when the meeting starts at 10am",
    "提醒我过几分钟喝水",
    "几分钟后提醒我喝水",
]

# Asking the memory, not the clock, or no asking at all: no note.
NOT_ASKS = [
    "remind me what we said",
    "Remind me again what the wifi password was",
    "remind me who called yesterday",
    "remind me of our plan",
    "remind me about what we discussed",
    "this reminds me of home",
    "what reminders did I have last week?",
    "Напомни, о чём мы говорили",
    "напомни, как зовут его жену",
    "напомни мне, что я тебе рассказывал",
    "Erinnere mich daran, was wir gesagt haben",
    "Ich erinnere mich an unser Gespräch",
    "Ich kann mich nicht erinnern",
    "Wir erinnern uns gern daran",
    "Erinnerst du dich?",
    "Recuérdame qué dijimos ayer",
    "recuérdame lo que hablamos",
    "recuérdame cómo se llama",
    "提醒我一下我们刚才说了什么",
    "提醒我他叫什么名字",
    "我记得",
    "remind me please what we said",
    "Напомни, пожалуйста, о чём мы говорили",
    "Erinnere mich bitte daran, was wir gesagt haben",
    "Recuérdame por favor qué dijimos",
    "Stell dir vor, ich habe keine Erinnerung daran",
    "my settings have no reminders",
    "the schedule reminders page is empty",
    "remind me what we said in a meeting",
    "напомни, о чём мы говорили в 2019",
]


@pytest.mark.parametrize("text", ASKS)
def test_a_reminder_asked_for_in_any_of_the_five_languages_is_seen(text: str) -> None:
    assert asks_for_reminder(text)


@pytest.mark.parametrize("text", NOT_ASKS)
def test_asking_what_was_said_is_no_reminder(text: str) -> None:
    assert not asks_for_reminder(text)
