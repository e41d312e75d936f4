"""Which messages ask the bot to forget (for the line said when the server drops tools)."""

from __future__ import annotations

import pytest

from mnemobot.bot.tools.forget_asks import asks_to_forget


@pytest.mark.parametrize(
    "text",
    [
        "Forget my locker code.",
        "Please forget my locker code.",
        "Can you forget my address?",
        "forget about my ex, please",
        "Olga: forget Tom's address",
        "Забудь код от моего шкафчика.",
        "Пожалуйста, забудь мой адрес",
        "Забудь, что я живу в Казани",
        "Vergiss meine PIN.",
        "Bitte vergiss, dass ich in Berlin wohne.",
        "Olvida mi dirección, por favor.",
        "Olvídate de mi contraseña",
        "请忘掉我的密码",
        "把我的地址忘掉",
    ],
)
def test_a_request_to_forget_is_read(text: str) -> None:
    assert asks_to_forget(text)


@pytest.mark.parametrize(
    "text",
    [
        "Don't forget to call mom",
        "I forgot my keys",
        "Forget it.",
        "forget about it!",
        "What did I forget?",
        "Не забудь купить молоко",
        "Я забыла ключи",
        "Забудь, это неважно",
        "Vergiss nicht, Milch zu kaufen",
        "Vergiss es.",
        "No olvides llamar",
        "Se me olvidó",
        "别忘了买牛奶",
        "我忘记了密码",
        "不要忘记开会",
    ],
)
def test_no_request_to_forget_is_read_into_other_words(text: str) -> None:
    assert not asks_to_forget(text)
