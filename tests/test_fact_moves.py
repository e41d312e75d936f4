"""A move as people say it: German word order, and a time said with the place (found
live: QA 7)."""

from __future__ import annotations

import pytest

from mnemobot.memory.write.fact_slots import slot_statements


def slots(text: str) -> list[tuple[str, str, str | None]]:
    return [(s.slot, s.value, s.left) for s in slot_statements(text)]


@pytest.mark.parametrize(
    ("said", "left"),
    [
        # The time between "bin" and "nach", and the verb second after a word of time.
        ("Ich bin letzte Woche nach Hamburg umgezogen.", None),
        ("Ich bin vor kurzem nach Hamburg gezogen.", None),
        ("Ich bin im Mai nach Hamburg gezogen.", None),
        ("Ich bin mit meiner Familie nach Hamburg gezogen.", None),
        ("Ich bin letzten Monat von Berlin nach Hamburg umgezogen.", "Berlin"),
        ("Letzte Woche bin ich nach Hamburg umgezogen.", None),
        ("Ich bin nach Hamburg letzte Woche umgezogen.", None),
        ("Jetzt wohne ich in Hamburg.", None),
        ("Seit Montag wohne ich in Hamburg.", None),
        ("Seit letzter Woche wohne ich in Hamburg.", None),
        ("Inzwischen lebe ich in Hamburg.", None),
        ("Jetzt lebe ich in Hamburg.", None),
        ("Ich wohne seit zwei Wochen in Hamburg.", None),
        ("Ich habe in Berlin gewohnt, aber jetzt wohne ich in Hamburg.", None),
        # The separable verb: "ziehe ... um".
        ("Ich ziehe gerade nach Hamburg um.", None),
        ("Jetzt ziehe ich nach Hamburg um.", None),
        ("Ich heiße Greta und ziehe gerade nach Hamburg um.", None),
    ],
)
def test_a_german_move_sets_the_home_in_any_word_order(said: str, left: str | None) -> None:
    assert ("residence", "Hamburg", left) in slots(said), said


@pytest.mark.parametrize(
    "said",
    [
        "Mein Bruder ist nach Hamburg umgezogen.",
        "Meine Eltern sind letzte Woche nach Hamburg gezogen.",
        "Meine Schwester wohnt jetzt in Hamburg.",
        "Ich wohne gern in Berlin, aber die Mieten sind hoch.",
        "Wenn ich nach Hamburg ziehe, melde ich mich.",
        "Ich melde mich, wenn ich nach Hamburg gezogen bin.",
        "Ich bin sicher dass er nach Hamburg gezogen ist.",
        "Ich bin froh, dass meine Eltern nach Hamburg gezogen sind.",
        "Ich bin nicht nach Hamburg gezogen.",
        "Ich wäre gern nach Hamburg gezogen.",
        "Ich bin gestern nach Hamburg gefahren.",
        # A plan, not yet the home; a stay, not a home.
        "Ich ziehe nächste Woche nach Hamburg um.",
        "Nächste Woche ziehe ich nach Hamburg um.",
        "Im Urlaub wohne ich in einem Hotel.",
        # Questions.
        "Bin ich nach Hamburg gezogen?",
        "Seit wann wohne ich in Hamburg?",
        "Soll ich nach Hamburg umziehen?",
        "Wohnst du jetzt in Hamburg?",
    ],
)
def test_what_is_not_the_speakers_move_sets_no_home(said: str) -> None:
    assert [slot for slot, _, _ in slots(said) if slot == "residence"] == [], said


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("I moved to Hamburg last week.", "Hamburg"),
        ("I relocated to Hamburg in May.", "Hamburg"),
        ("I moved to Hamburg a few weeks ago.", "Hamburg"),
        ("I live in Berlin since 2019.", "Berlin"),
        ("I work at Apple now.", "Apple"),
        ("Ich wohne in Berlin seit 2019.", "Berlin"),
        ("Ich arbeite bei Siemens seit letztem Jahr.", "Siemens"),
        ("Я переехал в Гамбург на прошлой неделе.", "Гамбург"),
        ("Я живу в Москве уже три года.", "Москве"),
        ("Я работаю в Яндексе с 2019 года.", "Яндексе"),
        ("Me mudé a Hamburgo la semana pasada.", "Hamburgo"),
        ("Vivo en Madrid desde hace dos años.", "Madrid"),
        ("Trabajo en Telefónica desde 2019.", "Telefónica"),
        ("我住在北京三年了。", "北京"),
        ("我搬到上海两个月了。", "上海"),
        # A name that only looks like a time stays whole.
        ("Ich bin nach Frankfurt am Main gezogen.", "Frankfurt am Main"),
        ("I moved to Palm Springs.", "Palm Springs"),
        ("I live in Spring Hill.", "Spring Hill"),
        ("My favourite song is Yesterday.", "Yesterday"),
    ],
)
def test_a_time_said_after_the_value_is_no_part_of_it(said: str, value: str) -> None:
    assert [v for _, v, _ in slots(said)] == [value], said
