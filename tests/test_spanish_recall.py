"""A Spanish user's short statements, written without accents, are found by the Spanish
questions about them: "vivo en madrid" reads as English (one Spanish clue), "¿Dónde vivo
ahora?" as Spanish, and "trabajo" is a content word, not a stopword."""

from __future__ import annotations

import time
from typing import Any

from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, context_text, reply
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.schedule_harness import SteppedClock
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

USER = 3434
TOLD = ["trabajo en una panaderia", "vivo en madrid", "toco la guitarra", "estudio medicina"]
# What else the user talked about since: the lines asked about are not simply the latest.
SINCE = [
    "me gusta mucho el futbol",
    "mi hermana tiene dos gatos",
    "el sabado vamos al cine",
    "mi primo viene de visita en verano",
    "manana tengo cita con el dentista",
    "quiero comprar una bicicleta nueva",
]
SMALL_MEMORY = {
    "softPromptBudgetTokens": 80,
    "maxPromptBudgetTokens": 80,
    "legacyContextBudgetTokens": 0,
}
# (question, a word of the line it asks about): two facts the slot keywords know (job,
# home), and two lines no slot is about.
QUESTIONS = [
    ("¿Dónde trabajo?", "panaderia"),
    ("¿Dónde vivo?", "madrid"),
    ("¿Desde cuándo toco la guitarra?", "toco"),
    ("¿Qué estudio en la universidad?", "medicina"),
]


def memory_block(request: dict[str, Any]) -> str:
    """The memory pack the request gave the model."""
    text = context_text(request)
    start = text.find("\n# Memory\n")
    return text[start:] if start >= 0 else ""


async def test_spanish_questions_find_what_was_said_without_accents(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # Room for a few lines only, and no daily notes in place of a match: what the
    # memory holds is found by the question's words or not at all.
    await start_bot(runtime={"memory": SMALL_MEMORY})
    said = 0
    # The model answers as a model would, in words that say nothing of the language.
    for text in [*TOLD, *SINCE]:
        openai_server.script(reply("¡Genial!"))
        telegram.send_text(text, chat_id=USER, language_code="es")
        said += 1
        await telegram.wait_for_messages_async(USER, said)
    missing = []
    for question, wanted in QUESTIONS:
        telegram.send_text("/new", chat_id=USER, language_code="es")
        said += 1
        await telegram.wait_for_messages_async(USER, said)
        telegram.send_text(question, chat_id=USER, language_code="es")
        said += 1
        await telegram.wait_for_messages_async(USER, said)
        memory = memory_block(openai_server.last_request())
        if wanted not in memory.lower():
            missing.append((question, memory))
    assert not missing


# Lines indexed as English whose only word in common with the question below is one of
# its Spanish function words ("la", "de").
SHARING_A_FUNCTION_WORD = ["Dinner at La Tasca on Friday", "Flying to Rio de Janeiro in May"]
ROOMY_MEMORY = {**SMALL_MEMORY, "softPromptBudgetTokens": 400, "maxPromptBudgetTokens": 400}


async def test_a_spanish_questions_function_words_pull_in_no_english_line(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    # Room for every line that matches, and an hour between messages (no turn is another's
    # neighbour in the conversation): what the pack shows is what the search found.
    clock = SteppedClock(time.time() - 30 * 3600)
    await start_bot(runtime={"memory": ROOMY_MEMORY}, clock=clock)
    said = 0
    for text in [*SHARING_A_FUNCTION_WORD, *SINCE, *TOLD]:
        clock.now += 3600
        openai_server.script(reply("¡Genial!"))
        telegram.send_text(text, chat_id=USER, language_code="es")
        said += 1
        await telegram.wait_for_messages_async(USER, said)
    telegram.send_text("/new", chat_id=USER, language_code="es")
    said += 1
    await telegram.wait_for_messages_async(USER, said)
    clock.now += 3600
    telegram.send_text(
        "¿Qué estudio en la universidad de Granada?", chat_id=USER, language_code="es"
    )
    await telegram.wait_for_messages_async(USER, said + 1)
    memory = memory_block(openai_server.last_request()).lower()
    assert "medicina" in memory
    assert not [line for line in SHARING_A_FUNCTION_WORD if line.lower() in memory], memory
