"""The bot's own words in the reader's language: Telegram's `language_code` of the sender,
the locale at the console; English for a language without a catalog."""

from __future__ import annotations

import re
import shutil
import string
import subprocess
import sys
from datetime import datetime
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_file
from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po

from mnemobot.bot.i18n import DOMAIN, LOCALE_DIR, TRANSLATED, words_for
from mnemobot.bot.schedule.firing import late_note, missed_text, paused_text
from mnemobot.bot.schedule.tasks import Firing, Schedule, Task, TaskChat
from mnemobot.bot.turn.commands import COMMANDS
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from tests.conftest import run_mnemobot, subprocess_env
from tests.telegram_harness import StartBot, start_bot, telegram

__all__ = ["start_bot", "telegram"]  # fixtures used by name below

PACKAGE = Path(__file__).resolve().parent.parent / "mnemobot"
USER = 4242
OWNER = 1
STRANGER = 777
GROUP = -1001
# A call of any of Babel's extraction keywords (gettext, ngettext, N_...).
_MARKERS = re.compile(rf"\b({'|'.join(map(re.escape, DEFAULT_KEYWORDS))})\(")


@cache
def _messages_of_the_code() -> dict[str | tuple[str, ...], str]:
    """Every string the code marks for translation, as `pybabel extract` finds it (in the
    files that call a marker: Babel tokenizes a file in about 50 ms)."""
    found: dict[str | tuple[str, ...], str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if not _MARKERS.search(path.read_text(encoding="utf-8")):
            continue
        for _, message, _, _ in extract_from_file("python", str(path)):
            found[message] = str(path.relative_to(PACKAGE))
    return found


def _catalog(language: str) -> Catalog:
    with (LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po").open("rb") as file:
        return read_po(file)


def _entries(catalog: Catalog) -> dict[object, object]:
    """id -> translation; a plural's as tuples (the .mo reader gives lists)."""

    def frozen(value: object) -> object:
        return tuple(value) if isinstance(value, list | tuple) else value

    return {frozen(message.id): frozen(message.string) for message in catalog if message.id}


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_message_of_the_code_is_translated_with_its_placeholders(language: str) -> None:
    code = _messages_of_the_code()
    assert len(code) > 100
    catalog = _catalog(language)
    kept = {message.id: message for message in catalog if message.id}
    missing = [message for message in code if message not in kept]
    assert missing == [], f"{language}: run pybabel update (see mnemobot/bot/i18n.py)"
    # A translation of a string the code no longer has is dead weight that hides a change.
    assert sorted(map(str, set(kept) - set(code))) == []
    for msgid, message in kept.items():
        assert not message.fuzzy, msgid
        english = [msgid] if isinstance(msgid, str) else list(msgid)
        translations = [message.string] if isinstance(msgid, str) else list(message.string)
        assert len(translations) == catalog.num_plurals or isinstance(msgid, str)
        for translation in translations:
            assert translation.strip(), (language, msgid)
            # A lost or misspelt placeholder would show "{count}" or fall back to English.
            assert _fields(translation) == _fields(english[-1]), (language, msgid, translation)
            # Command names stay as they are: /forget_me confirm works in every language.
            commands = [w for w in english[-1].split() if w.startswith("/")]
            for command in commands:
                assert command.rstrip(".,;:)") in translation, (language, msgid, translation)


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_shipped_compiled_catalogs_are_those_of_the_po_files(language: str) -> None:
    folder = LOCALE_DIR / language / "LC_MESSAGES"
    with (folder / f"{DOMAIN}.mo").open("rb") as file:
        compiled = _entries(read_mo(file))
    written = _entries(_catalog(language))
    assert compiled == written, f"run pybabel compile -d {LOCALE_DIR} -D {DOMAIN}"


async def test_a_russian_user_reads_start_help_status_and_reminders_in_russian(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    await start_bot()
    for count, command in enumerate(("/start", "/help", "/status", "/reminders"), 1):
        telegram.send_text(command, chat_id=USER, language_code="ru")
        await telegram.wait_for_messages_async(USER, count)
    start, help_, status, reminders = [m["plain_text"] for m in telegram.sent_messages(USER)]

    assert start.startswith("Привет, я ") and f"Ваш id пользователя — {USER}." in start
    assert "Команды:" in start
    assert help_.splitlines()[0] == "Команды:"
    assert "/new - Начать новый разговор (память сохранится)" in help_.splitlines()
    lines = status.splitlines()
    assert lines[0].startswith("Модель: ")
    assert "Сессия: 0 сообщений, ~" in status and "токенов до сжатия" in status
    assert "Сжатий: пока не было" in lines
    assert "Рабочая папка: в порядке" in lines
    assert "Настройки: действуют значения из runtime-config.json" in lines
    english = ("Model:", "Session:", "Compactions:", "Queue:", "Memory", "Workspace:", "Runtime")
    assert [line for line in lines if line.startswith(english)] == []
    assert reminders.startswith("В этом чате ничего не запланировано. Попросите меня")


async def test_a_russian_user_on_a_small_home_server_reads_tools_and_input_in_russian(
    start_bot: StartBot, telegram: TelegramServer, openai_server: FakeOpenAIServer
) -> None:
    """llama.cpp with a 2,048-token window: the tools are cut to a tenth of the input, and
    the replies are streamed without usage. /tools and the /status lines about them came
    in English, with numbers grouped the English way (1,536 beside 50 000)."""
    openai_server.context_window = 2048
    openai_server.window_reported_by = "llamacpp"
    openai_server.usage_in_streams = False
    openai_server.cache_report = None
    await start_bot(runtime={"telegram": {"streaming": "on"}})
    telegram.send_text("Привет! Меня зовут Анна.", chat_id=USER, language_code="ru")
    await telegram.wait_for_messages_async(USER, 1)
    for count, command in enumerate(("/status", "/tools"), 2):
        telegram.send_text(command, chat_id=USER, language_code="ru")
        await telegram.wait_for_messages_async(USER, count)
    status, tools = [m["plain_text"] for m in telegram.sent_messages(USER)[1:]]

    [input_line] = [line for line in status.splitlines() if line.startswith("Входные токены")]
    assert re.fullmatch(
        r"Входные токены: ~\d+ за 1 вызов модели \(по оценке: сервер модели не сообщает, "
        r"сколько\)",
        input_line,
    ), input_line
    [tools_line] = [line for line in status.splitlines() if line.startswith("Инструменты")]
    assert tools_line == (
        "Инструменты: доступно 1 из 7, встроенные в краткой форме; встроенные инструменты: не "
        "вошли 6 из 7 (под инструменты отведено токенов: 153, десятая часть входного лимита "
        "модели (1\u00a0536))"
    )
    assert tools.splitlines() == [
        "Инструменты, которыми я могу пользоваться в этом чате (1 из 7: под инструменты "
        "отведено токенов: 153, десятая часть входного лимита модели (1\u00a0536)):",
        "- schedule (встроенный): Сделать что-то позже в этом чате.",
        "- встроенные инструменты: 6 из 7 не поместились",
    ]
    # Not a number grouped the English way anywhere.
    assert not re.search(r"\d,\d{3}", status + tools)


async def test_every_built_in_tool_reads_in_each_language(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    """/tools lists the built-in tools by their first sentences: each has its words in
    every catalog (a changed description fails here until it is translated again)."""
    await start_bot()
    languages = ("en", *TRANSLATED)
    for count, language in enumerate(languages, 1):
        telegram.send_text("/tools", chat_id=USER, language_code=language)
        await telegram.wait_for_messages_async(USER, count)
    said = {
        language: [line.split("): ", 1)[1] for line in sent["plain_text"].splitlines()[1:]]
        for language, sent in zip(languages, telegram.sent_messages(USER), strict=True)
    }
    assert len(said["en"]) == 7
    for language in TRANSLATED:
        assert [a == b for a, b in zip(said["en"], said[language], strict=True)] == [False] * 7


async def test_every_built_in_tool_shows_what_it_does_in_each_language(
    start_bot: StartBot,
) -> None:
    """The line shown while a tool runs ("🔎 searching memory…"), of every built-in tool
    and each thing the memory tool does, has its words in every catalog."""
    tools = (await start_bot()).app.tools
    calls = [(name, "{}") for name in tools.names if name != "memory"]
    calls += [("memory", f'{{"operation": "{op}"}}') for op in ("search", "add", "forget")]
    assert len(calls) == 9
    for language in TRANSLATED:
        english = [tools.status_line(name, arguments, "en") for name, arguments in calls]
        own = [tools.status_line(name, arguments, language) for name, arguments in calls]
        assert [a == b for a, b in zip(english, own, strict=True)] == [False] * 9, language


async def test_in_a_group_each_member_reads_the_bot_in_their_own_language(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    await start_bot()

    def ask(user_id: int, language: str) -> None:
        telegram.send_text(
            "/help", chat_id=GROUP, user_id=user_id, chat_type="supergroup", language_code=language
        )

    ask(11, "de")
    await telegram.wait_for_messages_async(GROUP, 1)
    ask(12, "zh-hans")
    await telegram.wait_for_messages_async(GROUP, 2)
    ask(13, "es")
    await telegram.wait_for_messages_async(GROUP, 3)
    german, chinese, spanish = [m["plain_text"] for m in telegram.sent_messages(GROUP)]
    assert german.startswith("Befehle:\n/start - Was dieser Bot ist und was er sich merkt")
    assert chinese.startswith("命令：\n/start - 这个机器人是什么，会记住什么")
    assert spanish.startswith("Comandos:\n/start - Qué es este bot y qué recuerda")


async def test_a_german_stranger_is_refused_in_german(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    await start_bot(allowed=str(OWNER))
    telegram.send_text("Hallo, wer bist du?", chat_id=STRANGER, language_code="de")
    [refusal] = await telegram.wait_for_messages_async(STRANGER, 1)
    assert refusal["plain_text"] == (
        f"Entschuldigung, das ist ein privater Bot. Deine Telegram-Nutzer-ID ist {STRANGER}. "
        f"Damit du den Bot nutzen kannst, trägt der Besitzer {STRANGER} in "
        "TELEGRAM_ALLOWED_USERS ein. "
        "Bis dahin antworte ich nicht auf deine Nachrichten."
    )


@pytest.mark.parametrize("language", ["pt-br", "fr", "en-gb", ""])
async def test_a_language_without_words_of_its_own_reads_english(
    start_bot: StartBot, telegram: TelegramServer, language: str
) -> None:
    await start_bot()
    telegram.send_text("/help", chat_id=USER, language_code=language)
    [answer] = await telegram.wait_for_messages_async(USER, 1)
    assert answer["plain_text"] == "\n".join(
        ["Commands:", *(f"/{spec.name} - {spec.description}" for spec in COMMANDS)]
    )


async def test_the_command_menu_is_set_in_each_language(
    start_bot: StartBot, telegram: TelegramServer
) -> None:
    await start_bot()
    calls = telegram.calls("setMyCommands")
    assert sorted(call["params"].get("language_code") or "" for call in calls) == [
        "",
        "de",
        "es",
        "ru",
        "zh",
    ]
    english = telegram.commands_for()
    assert english == [{"command": s.name, "description": s.description} for s in COMMANDS]
    menus = {language: telegram.commands_for(language_code=language) for language in TRANSLATED}
    for language, menu in menus.items():
        assert [entry["command"] for entry in menu] == [spec.name for spec in COMMANDS]
        # Every description in the language's words, none left in English.
        assert not {entry["description"] for entry in menu} & {s.description for s in COMMANDS}
        assert menu[0]["description"] == words_for(language).gettext(COMMANDS[0].description)
    assert menus["ru"][3]["description"] == (
        "Сжать старые сообщения в пересказ: /compact [N] оставит последние N"
    )
    assert menus["zh"][9]["description"] == "清除本聊天的记忆和对话（需确认）"


def test_the_console_speaks_the_language_of_the_locale(
    workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    env = {
        "BOT_WORKSPACE": str(workspace),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": openai_server.base_url,
    }
    german = run_mnemobot("chat", input="/help\n", LANG="de_DE.UTF-8", **env)
    assert german.returncode == 0, german.stderr
    assert german.stdout.splitlines()[:2] == [
        "Befehle:",
        "/start - Was dieser Bot ist und was er sich merkt",
    ]
    english = run_mnemobot("chat", input="/help\n", LANG="C.UTF-8", **env)
    assert english.stdout.splitlines()[0] == "Commands:"


@pytest.mark.parametrize("damage", ["missing", "cut short"])
def test_a_missing_or_damaged_catalog_leaves_its_readers_english(
    tmp_path: Path, workspace: Path, openai_server: FakeOpenAIServer, damage: str
) -> None:
    """An install whose German catalog is missing or cut short (a build that skipped the
    compiled catalogs, a disk that lost a block) still answers German readers, in English."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "mnemobot", ignore=shutil.ignore_patterns("__pycache__"))
    catalog = site / "mnemobot" / "bot" / "locale" / "de" / "LC_MESSAGES" / f"{DOMAIN}.mo"
    if damage == "missing":
        catalog.unlink()
    else:
        catalog.write_bytes(catalog.read_bytes()[:10])
    env = subprocess_env(
        BOT_WORKSPACE=str(workspace),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=openai_server.base_url,
        LANG="de_DE.UTF-8",
        PYTHONPATH=str(site),
    )
    console = subprocess.run(
        [sys.executable, "-m", "mnemobot", "chat"],
        input="/help\n",
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert console.returncode == 0, console.stderr
    # Answered (before: no answer at all, a traceback in the log), and the log says why.
    assert console.stdout.splitlines()[:1] == ["Commands:"], console.stderr
    assert "no de catalog" in console.stderr and "Traceback" not in console.stderr


ZONE = "Europe/Moscow"
DUE = datetime(2026, 11, 27, 9, 0, tzinfo=ZoneInfo(ZONE)).timestamp()


def _firing(language: str | None, **state: object) -> Firing:
    chat = TaskChat("telegram", str(USER), user_id=str(USER), language=language)
    task = Task(
        id="t1",
        number=3,
        chat=chat,
        kind="reminder",
        text="позвонить арендодателю",
        schedule=Schedule(type="every", days=1, anchor=DUE),
        zone=ZONE,
        created_at=DUE - 86_400,
        next_due=DUE + 86_400,
    )
    return Firing(task, DUE, **state)  # type: ignore[arg-type]


def test_a_reminder_missed_or_late_is_told_in_the_language_it_was_set_in() -> None:
    later = DUE + 3 * 3600
    missed = missed_text(_firing("ru", missed=True, skipped=1, next_due=DUE + 86_400), later)
    assert missed == (
        "Напоминание #3 (2 раза) пропущено — в 09:00 меня не было в сети: "
        "позвонить арендодателю\nСледующий раз: сб, 28 ноября, 09:00 (Europe/Moscow)."
    )
    assert late_note(_firing("ru", late=True, skipped=5), later) == (
        "(с опозданием: в 09:00 меня не было в сети; за это время срок наступал ещё 5 раз)"
    )
    assert late_note(_firing("en", late=True, skipped=1), later) == (
        "(late: I was offline at 09:00; it was also due 1 earlier time meanwhile)"
    )
    assert paused_text(3, 22, words_for("ru")).startswith(
        "Задача #3 приостановлена: она 22 раза подряд завершилась ошибкой."
    )
