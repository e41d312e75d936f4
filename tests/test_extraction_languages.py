"""Durable facts from Russian, Chinese, German and Spanish chats, as from English ones.

Every statement goes through the real write path (MemoryRecord.record_turn), so what
is checked is what a user would notice: the fact is promoted to durable memory (or
not), and it comes back in the pack for a question asked in the same language.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemobot.config.runtime import RuntimeConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import ItemType, Layer
from mnemobot.memory.write.extraction import is_question, is_small_talk, split_sentences
from mnemobot.memory.write.write_path import PROMOTION_MIN_CONFIDENCE

AT = datetime(2025, 3, 1, 10, tzinfo=UTC).timestamp()
CONFIG = RuntimeConfig().memory
FACT = ItemType.PROJECT_FACT
PREFERENCE = ItemType.PREFERENCE
DECISION = ItemType.DECISION

# (language, what the statement is about, the user's words, the durable item's type)
DURABLE = [
    ("en", "residence", "I live in Paris.", FACT),
    ("en", "job", "I work at Acme as a data engineer.", FACT),
    ("en", "partner", "My wife is named Anna.", FACT),
    ("en", "pet", "I have a dog named Rex.", FACT),
    ("en", "preference", "I prefer green tea.", PREFERENCE),
    ("en", "allergy", "I'm allergic to nuts.", FACT),
    ("en", "decision", "We decided to use Postgres.", DECISION),
    ("en", "request", "Never push to main.", PREFERENCE),
    ("en", "phone", "My phone number is +1 555 0100.", FACT),
    ("ru", "residence", "Я живу в Москве.", FACT),
    ("ru", "job", "Я работаю программистом в Яндексе.", FACT),
    ("ru", "partner", "Мою жену зовут Анна.", FACT),
    ("ru", "pet", "У меня есть собака по кличке Рекс.", FACT),
    ("ru", "preference", "Я предпочитаю зелёный чай.", PREFERENCE),
    ("ru", "allergy", "У меня аллергия на орехи.", FACT),
    ("ru", "decision", "Мы решили использовать Postgres.", DECISION),
    ("ru", "request", "Никогда не пушь в main.", PREFERENCE),
    ("ru", "phone", "Мой номер телефона: +7 999 123-45-67.", FACT),
    ("zh", "residence", "我住在北京。", FACT),
    ("zh", "job", "我在谷歌工作。", FACT),
    ("zh", "partner", "我妻子叫安娜。", FACT),
    ("zh", "pet", "我养了一只猫，叫咪咪。", FACT),
    ("zh", "preference", "我更喜欢喝绿茶。", PREFERENCE),
    ("zh", "allergy", "我对花生过敏。", FACT),
    ("zh", "decision", "我们决定使用Postgres。", DECISION),
    ("zh", "request", "永远不要直接推送到main分支。", PREFERENCE),
    ("zh", "phone", "我的电话号码是13812345678。", FACT),
    ("de", "residence", "Ich wohne in Berlin.", FACT),
    ("de", "job", "Ich arbeite bei Siemens als Ingenieurin.", FACT),
    ("de", "partner", "Meine Frau heißt Anna.", FACT),
    ("de", "pet", "Ich habe einen Hund namens Rex.", FACT),
    ("de", "preference", "Ich trinke lieber grünen Tee.", PREFERENCE),
    ("de", "allergy", "Ich bin allergisch gegen Nüsse.", FACT),
    ("de", "decision", "Wir haben uns für Postgres entschieden.", DECISION),
    ("de", "request", "Pushe niemals direkt auf main.", PREFERENCE),
    ("de", "phone", "Meine Telefonnummer ist 0151 2345678.", FACT),
    ("es", "residence", "Vivo en Madrid.", FACT),
    ("es", "job", "Trabajo en Telefónica como ingeniera.", FACT),
    ("es", "partner", "Mi esposa se llama Ana.", FACT),
    ("es", "pet", "Tengo un perro que se llama Max.", FACT),
    ("es", "preference", "Prefiero el té verde.", PREFERENCE),
    ("es", "allergy", "Soy alérgico a los frutos secos.", FACT),
    ("es", "decision", "Hemos decidido usar Postgres.", DECISION),
    ("es", "request", "Nunca hagas push a main.", PREFERENCE),
    ("es", "phone", "Mi número de teléfono es 612 345 678.", FACT),
]

# (language, why it is no durable fact, the user's words)
NOT_DURABLE = [
    ("en", "question", "Where do you live?"),
    ("en", "hedge", "Maybe I like jazz."),
    ("en", "small talk", "Thanks, sounds good!"),
    ("en", "third person", "Anna lives in Rome."),
    ("en", "advice", "You should try yoga."),
    ("ru", "question", "Где ты живёшь?"),
    ("ru", "question", "А ты любишь джаз"),
    ("ru", "hedge", "Может быть, я люблю джаз."),
    ("ru", "small talk", "Привет, спасибо!"),
    ("ru", "third person", "Мой друг говорит, что он живёт в Париже."),
    ("ru", "advice", "Тебе стоит попробовать йогу."),
    ("ru", "kind words", "Не волнуйся, всё будет хорошо."),
    ("zh", "question", "你住在哪里？"),
    ("zh", "question", "你喜欢喝茶吗"),
    ("zh", "hedge", "也许我喜欢爵士乐。"),
    ("zh", "small talk", "谢谢！你好！"),
    ("zh", "third person", "他住在上海。"),
    ("zh", "advice", "你应该试试瑜伽。"),
    ("zh", "kind words", "别担心。"),
    ("de", "question", "Wo wohnst du?"),
    ("de", "question", "Wohnst du in Berlin"),
    ("de", "hedge", "Ich mag vielleicht Jazz."),
    ("de", "small talk", "Danke, alles klar!"),
    ("de", "third person", "Er wohnt in München."),
    ("de", "advice", "Du solltest Yoga ausprobieren."),
    ("de", "kind words", "Mach dir keine Sorgen."),
    ("es", "question", "¿Dónde vives?"),
    ("es", "question", "Dónde trabajas ahora"),
    ("es", "hedge", "Quizás me gusta el jazz."),
    ("es", "small talk", "¡Hola, muchas gracias!"),
    ("es", "third person", "Ella vive en Sevilla."),
    ("es", "advice", "Deberías probar el yoga."),
    ("es", "kind words", "No te preocupes."),
    ("es", "past", "Nunca he estado en Roma."),
]


@pytest.fixture
def memory(workspace: Path) -> WorkspaceMemory:
    service = WorkspaceMemory.open(workspace)
    yield service
    service.close()


def record(memory: WorkspaceMemory, text: str, scope: str = "telegram:7"):
    return memory.record.record_turn(
        scope=scope, user_text=text, assistant_text="", at=AT, config=CONFIG, tz=UTC
    )


@pytest.mark.parametrize(
    ("language", "about", "text", "item_type"),
    DURABLE,
    ids=[f"{lang}-{about}" for lang, about, _, _ in DURABLE],
)
def test_a_first_person_statement_becomes_a_durable_fact(
    memory: WorkspaceMemory, language: str, about: str, text: str, item_type: ItemType
) -> None:
    recorded = record(memory, text)
    assert [(item.type, item.content) for item in recorded.promoted] == [(item_type, text)]
    [durable] = recorded.promoted
    assert durable.layer is Layer.SEMANTIC
    assert durable.confidence >= PROMOTION_MIN_CONFIDENCE


@pytest.mark.parametrize(
    ("language", "why", "text"),
    NOT_DURABLE,
    ids=[f"{lang}-{why}-{n}" for n, (lang, why, _) in enumerate(NOT_DURABLE)],
)
def test_questions_hedges_small_talk_and_chatter_stay_out_of_durable_memory(
    memory: WorkspaceMemory, language: str, why: str, text: str
) -> None:
    recorded = record(memory, text)
    assert recorded.promoted == []
    if why == "small talk":
        assert recorded.stored == []  # not even an episode


@pytest.mark.parametrize(
    ("statement", "question", "answer"),
    [
        ("Я живу в Москве.", "Где я живу?", "Москве"),
        ("我对花生过敏。", "我对什么过敏？", "花生"),
    ],
)
def test_a_fact_comes_back_for_a_question_in_the_same_language(
    memory: WorkspaceMemory, statement: str, question: str, answer: str
) -> None:
    scope = "telegram:8"
    for chatter in ("Какая сегодня погода?", "今天天气怎么样？", "Расскажи анекдот."):
        record(memory, chatter, scope)
    record(memory, statement, scope)
    pack = memory.recall.build_pack(scope, question, now=AT + 3600, config=CONFIG, tz=UTC)
    # The pack holds one copy of the fact (durable or its episode, whichever ranks first).
    assert pack.rendered.count(answer) == 1, pack.rendered
    recorded = [item for item in memory.scopes.store(scope).items.values() if item.type is FACT]
    assert {item.content for item in recorded} == {statement}


def test_cjk_sentences_end_at_full_width_marks() -> None:
    assert split_sentences("我住在北京。我喜欢喝茶！你呢？好的") == [
        "我住在北京。",
        "我喜欢喝茶！",
        "你呢？",
        "好的",
    ]


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("Где ты живёшь", True),
        ("Знаешь ли ты Анну", True),
        ("Я живу в Москве", False),
        ("你住在哪里", True),
        ("你喜欢茶吗", True),
        ("我什么都吃。", False),
        ("Wo arbeitest du", True),
        ("Ich arbeite bei Siemens", False),
        ("¿Dónde vives", True),
        ("Cuándo empieza", True),
        ("Vivo donde trabajo", False),
    ],
)
def test_questions_are_told_in_each_language(text: str, question: bool) -> None:
    assert is_question(text) is question


@pytest.mark.parametrize(
    ("text", "small_talk"),
    [
        ("Спасибо большое!", True),
        ("Спасибо, я живу в Москве.", False),
        ("谢谢！", True),
        ("好的，谢谢你。", True),
        ("谢谢，我住在北京。", False),
        ("Vielen Dank, bis später!", True),
        ("Danke, ich wohne in Berlin.", False),
        ("¡Muchas gracias, hasta luego!", True),
        ("Gracias, vivo en Madrid.", False),
    ],
)
def test_small_talk_is_told_in_each_language(text: str, small_talk: bool) -> None:
    assert is_small_talk(text) is small_talk


@pytest.mark.parametrize(
    ("text", "item_type"),
    [
        ("I love the word привет.", PREFERENCE),  # English quoting Russian stays English
        ("Мы решили перейти на PostgreSQL 16 и Redis.", DECISION),  # Latin names in Russian
        ("Ich wohne seit fünf Jahren in Hamburg.", FACT),
        ("Tengo dos hijos y vivo en Valencia.", FACT),
        ("我们用Postgres吧。", DECISION),
    ],
)
def test_mixed_scripts_and_word_order_still_give_the_fact(
    memory: WorkspaceMemory, text: str, item_type: ItemType
) -> None:
    recorded = record(memory, text)
    assert [(item.type, item.content) for item in recorded.promoted] == [(item_type, text)]


def test_an_order_among_several_people_stays_an_episode(memory: WorkspaceMemory) -> None:
    recorded = memory.record.record_turn(
        scope="telegram:-100",
        user_text="Никогда не пушь в main.",
        assistant_text="",
        at=AT,
        config=CONFIG,
        tz=UTC,
        speaker="Олег",
    )
    assert recorded.promoted == []
    [order] = [item for item in recorded.stored if "request" in item.tags]
    assert order.type is PREFERENCE
    assert order.content == "Олег: Никогда не пушь в main."
