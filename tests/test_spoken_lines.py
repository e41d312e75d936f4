"""What the sender is told about how a voice note was heard, given what the speech model
is: an English-only one says so in the sender's language, so a note in another language
is typed instead of recorded again in vain; a multilingual model's lines are as before."""

from __future__ import annotations

import pytest

from mnemobot.bot.channels.telegram.spoken_lines import heard_note, no_words_line
from mnemobot.bot.i18n import N_, words_for

VOICE = N_("voice note")
SHOWN = "received/voice-1.ogg"


@pytest.mark.parametrize(
    ("language", "only_english", "type_it"),
    [
        ("ru", "здесь понимает только английский", "напишите текстом"),
        ("de-AT", "versteht nur Englisch", "schreib es also bitte auf"),
        ("es", "solo entiende inglés", "escríbelo"),
        ("zh-hans", "只懂英语", "请直接打字"),
        ("en", "understands only English", "please type it instead"),
    ],
)
def test_no_words_from_an_english_only_model_say_it_hears_only_english(
    language: str, only_english: str, type_it: str
) -> None:
    line = no_words_line(words_for(language), VOICE, " 0:03", SHOWN, english_only=True)
    assert only_english in line and type_it in line
    assert SHOWN in line and "0:03" in line and "\n" not in line


def test_no_words_from_a_multilingual_model_keep_their_line() -> None:
    line = no_words_line(words_for("ru"), VOICE, " 0:03", SHOWN, english_only=False)
    assert line == (
        "Не удалось разобрать ни слова: голосовое сообщение (0:03). Файл сохранён как "
        "received/voice-1.ogg; отправьте его снова или напишите текстом."
    )


@pytest.mark.parametrize("language", ["ru", "pt-BR", "de"])
def test_words_an_english_only_model_heard_from_a_non_english_sender_come_with_a_note(
    language: str,
) -> None:
    words = words_for(language)
    note = heard_note(
        words, VOICE, " 0:02", 2.4, "see you", english_only=True, sender_language=language
    )
    assert note is not None and "see you" in note and "\n" not in note
    # Portuguese has no catalog: its sender reads the English line.
    expected = {"ru": "понимает только английский", "pt-BR": "understands only English"}
    assert expected.get(language, "versteht nur Englisch") in note


@pytest.mark.parametrize("log_prob", [None, -0.86, -1.3])
def test_words_the_english_only_model_was_unsure_of_come_with_the_note(
    log_prob: float | None,
) -> None:
    note = heard_note(
        words_for("ru"),
        VOICE,
        " 0:02",
        2.4,
        "see you",
        english_only=True,
        sender_language="ru",
        log_prob=log_prob,
    )
    assert note is not None and "понимает только английский" in note


@pytest.mark.parametrize("log_prob", [-0.3, -0.75])
def test_english_the_english_only_model_was_sure_of_comes_without_the_note(
    log_prob: float,
) -> None:
    """A sender whose app is in another language and who spoke English was told on every
    note that the model hears only English."""
    note = heard_note(
        words_for("ru"),
        VOICE,
        " 0:02",
        2.4,
        "see you",
        english_only=True,
        sender_language="ru",
        log_prob=log_prob,
    )
    assert note is None


@pytest.mark.parametrize(
    ("english_only", "sender"), [(True, "en"), (True, "en-GB"), (True, None), (False, "ru")]
)
def test_a_short_note_heard_as_words_is_otherwise_told_nothing(
    english_only: bool, sender: str | None
) -> None:
    note = heard_note(
        words_for(sender),
        VOICE,
        " 0:02",
        2.4,
        "see you",
        english_only=english_only,
        sender_language=sender,
    )
    assert note is None
