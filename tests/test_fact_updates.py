"""Memory that stays current: replaced facts, repeated facts, forgetting that erases."""

from __future__ import annotations

import time
from datetime import UTC
from pathlib import Path

import orjson
import pytest

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.memory.store.items import Layer, MemoryItem
from tests.conftest import run_mnemobot

DAY = 86_400.0
NOW = time.time()
CONFIG = MemoryConfig()
SCOPE = "console:local"


def say(memory: WorkspaceMemory, text: str, days_ago: float, reply: str = "Noted.") -> None:
    memory.record.record_turn(
        scope=SCOPE,
        user_text=text,
        assistant_text=reply,
        at=NOW - days_ago * DAY,
        config=CONFIG,
        tz=UTC,
    )


def pack_text(memory: WorkspaceMemory, question: str) -> str:
    return memory.recall.build_pack(SCOPE, question, now=NOW, config=CONFIG, tz=UTC).rendered


def fact_lines(rendered: str) -> list[str]:
    return [line for line in rendered.splitlines() if line.startswith("- ")]


def test_a_move_replaces_the_old_city_in_the_pack(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, "I live in Paris.", 60)
    for day in range(59, 11, -6):
        say(memory, f"Remind me to water the plants on day {day}.", day)
    say(memory, "I moved to Berlin.", 10)
    for question in ("where do I live?", "What's my home city?"):
        lines = fact_lines(pack_text(memory, question))
        assert any("Berlin" in line for line in lines), (question, lines)
        for line in lines:
            if "Paris" in line:
                assert "earlier, until" in line, line
    durable = [i for i in memory.scopes.store(SCOPE).items.values() if i.layer is Layer.SEMANTIC]
    paris = next(i for i in durable if "Paris" in i.content)
    berlin = next(i for i in durable if "Berlin" in i.content)
    assert paris.superseded_by == berlin.id
    # The marks survive a restart, and files without them still load.
    reloaded = WorkspaceMemory.open(tmp_path).scopes.store(SCOPE).items[paris.id]
    assert reloaded.valid_to == paris.valid_to and reloaded.superseded_by == berlin.id


def test_a_move_that_names_where_it_was_from_replaces_that_city(tmp_path: Path) -> None:
    # People say where they left as often as where they went: the new city is the home.
    cases = [
        (
            "Hi! My name is Alex and I live in Berlin.",
            "Big news: I moved from Berlin to Lisbon last week.",
            "Lisbon",
            "Berlin",
        ),
        ("Я живу в Москве.", "Я переехал из Москвы в Казань.", "Казань", "Москве"),
        (
            "Ich wohne in Hamburg.",
            "Ich bin von Hamburg nach München gezogen.",
            "München",
            "Hamburg",
        ),
    ]
    for number, (before, after, new, old) in enumerate(cases):
        memory = WorkspaceMemory.open(tmp_path / str(number))
        say(memory, before, 30)
        say(memory, after, 2)
        durable = [
            i for i in memory.scopes.store(SCOPE).items.values() if i.layer is Layer.SEMANTIC
        ]
        moved = next(i for i in durable if new in i.content)
        left = next(i for i in durable if old in i.content and new not in i.content)
        assert left.superseded_by == moved.id, (after, left)


def test_moving_from_something_that_is_not_the_home_keeps_the_home(tmp_path: Path) -> None:
    # "Moved from X to Y" is said of tools, jobs and plans too: it moves the home only when
    # X is the home memory knows.
    cases = [
        ("I live in Berlin.", "I moved from Windows to Linux last year."),
        ("I live in Berlin.", "I moved from Java to Kotlin."),
        ("I live in Berlin.", "I moved from Berlin to be closer to my parents."),
        ("I live in Berlin.", "I moved from Madrid to Lisbon in 2019."),
        ("Я живу в Москве.", "Я переехал из Москвы в январе."),
    ]
    for number, (before, after) in enumerate(cases):
        memory = WorkspaceMemory.open(tmp_path / str(number))
        say(memory, before, 30)
        say(memory, after, 2)
        items = memory.scopes.store(SCOPE).items.values()
        home = next(i for i in items if i.layer is Layer.SEMANTIC and i.content.endswith(before))
        assert home.superseded_by is None and home.valid_to is None, (after, home)


def test_updates_in_russian_and_german_are_rules_too(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, "Я живу в Москве.", 60)
    say(memory, "Ich arbeite bei Siemens.", 59)
    say(memory, "Я переехал в Казань.", 10)
    say(memory, "Ich arbeite jetzt bei Bosch.", 9)
    moscow = [line for line in fact_lines(pack_text(memory, "Где я живу?")) if "Москве" in line]
    assert moscow and all("earlier" in line for line in moscow)
    assert "Казань" in pack_text(memory, "Где я живу?")
    work = pack_text(memory, "Wo arbeite ich?")
    assert "Bosch" in work
    assert all("earlier" in line for line in fact_lines(work) if "Siemens" in line)


def test_updates_in_spanish_are_rules_too(tmp_path: Path) -> None:
    # Spanish leaves the "I" out: "Vivo en Madrid", "Me mudé a Sevilla".
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, "Vivo en Madrid.", 60)
    say(memory, "Trabajo en Telefónica.", 59)
    say(memory, "Mi número de teléfono es +34 600 111 222.", 58)
    say(memory, "No vivo en Toledo.", 30)
    say(memory, "Me mudé a Sevilla.", 10)
    say(memory, "Ahora trabajo para Iberia.", 9)
    say(memory, "Mi nuevo número es +34 699 333 444.", 8)
    home = pack_text(memory, "¿Dónde vivo ahora?")
    assert any("Sevilla" in line and "earlier" not in line for line in fact_lines(home)), home
    assert all("earlier" in line for line in fact_lines(home) if "Madrid" in line), home
    # "No vivo en Toledo" is no home: no fact says it (the turn, in the user's words, may
    # show, since the question asks where they live).
    current_facts = [line for line in fact_lines(home) if "Fact" in line and "earlier" not in line]
    assert "Toledo" not in " ".join(current_facts), home
    work = pack_text(memory, "¿En qué empresa trabajo?")
    assert "Iberia" in work
    assert all("earlier" in line for line in fact_lines(work) if "Telefónica" in line)
    phone = pack_text(memory, "¿Cuál es mi número de teléfono?")
    assert "699 333 444" in phone
    assert all("earlier" in line for line in fact_lines(phone) if "600 111 222" in line)


def test_updates_in_chinese_are_rules_too(tmp_path: Path) -> None:
    # Chinese writes no spaces and its own punctuation: "我住在北京。我在百度工作。"
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, "我住在北京。", 60)
    say(memory, "我在百度工作。", 59)
    say(memory, "我的手机号码是13800001111。", 58)
    say(memory, "我不住在天津。", 30)
    say(memory, "我上个月搬到了上海。", 10)
    say(memory, "我现在在腾讯工作，我住在浦东。", 9)
    say(memory, "我的新手机号是13999992222。", 8)
    home = pack_text(memory, "我现在住在哪里？")
    assert any("浦东" in line and "earlier" not in line for line in fact_lines(home)), home
    assert all("earlier" in line for line in fact_lines(home) if "北京" in line), home
    current_facts = [line for line in fact_lines(home) if "Fact" in line and "earlier" not in line]
    assert "天津" not in " ".join(current_facts), home
    work = pack_text(memory, "我在哪家公司工作？")
    assert "腾讯" in work
    assert all("earlier" in line for line in fact_lines(work) if "百度" in line), work
    phone = pack_text(memory, "我的电话号码是多少？")
    assert "13999992222" in phone
    assert all("earlier" in line for line in fact_lines(phone) if "13800001111" in line), phone


@pytest.mark.parametrize(
    ("before", "after", "question", "old", "new"),
    [
        ("我是一名工程师。", "我现在担任产品经理。", "我现在的职位是什么？", "工程师", "产品经理"),
        ("我的工作是老师。", "我现在的工作是律师。", "我是做什么工作的？", "老师", "律师"),
    ],
)
def test_a_changed_post_is_a_rule_in_chinese_too(
    tmp_path: Path, before: str, after: str, question: str, old: str, new: str
) -> None:
    # English, German and Spanish had it ("I work as"); in Chinese both posts were current.
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, before, 60)
    say(memory, "我住在北京。", 30)
    say(memory, after, 10)
    post = pack_text(memory, question)
    assert any(new in line and "earlier" not in line for line in fact_lines(post)), post
    assert all("earlier" in line for line in fact_lines(post) if old in line), post
    # Found live: the pack had no line of the old post, and both were current facts.
    durable = [
        i for i in memory.scopes.store(SCOPE).items.values() if i.layer is not Layer.EPISODIC
    ]
    assert [i.is_superseded for i in durable if old in i.content] == [True], durable
    assert [i.is_superseded for i in durable if new in i.content] == [False], durable


def test_a_move_leaves_the_job_said_in_the_same_chinese_sentence(tmp_path: Path) -> None:
    # Found live: after "我住在北京，在一家银行工作。" and "我搬到了上海。" the bank job was
    # shown as earlier too (the sentence was one fact, of the home alone).
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, "我住在北京，在一家银行工作。", 60)
    say(memory, "我搬到了上海。", 10)
    work = pack_text(memory, "我在哪里工作？")
    assert any("银行" in line and "earlier" not in line for line in fact_lines(work)), work
    home = pack_text(memory, "我现在住在哪里？")
    assert any("上海" in line and "earlier" not in line for line in fact_lines(home)), home
    assert all("earlier" in line for line in fact_lines(home) if "住在北京" in line), home


def test_the_same_fact_in_other_words_takes_one_entry(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    wordings = [
        "I really love hiking in the mountains.",
        "I really love hiking in the mountains!",
        "I really love hiking in mountains.",
        "Really, I love hiking the mountains.",
    ]
    for n, text in enumerate(wordings * 3):
        say(memory, text, 40 - n)
    facts = [
        i
        for i in memory.scopes.store(SCOPE).items.values()
        if i.layer is Layer.SEMANTIC and "hiking" in i.content
    ]
    assert len(facts) == 1
    assert facts[0].mentions == 12
    assert facts[0].content == "Really, I love hiking the mountains."
    rendered = pack_text(memory, "what do I love doing?")
    assert sum("hiking" in line for line in fact_lines(rendered)) == 1, rendered
    # Forgetting the fact forgets every wording it was said in.
    assert memory.forget.forget(SCOPE, facts[0].id)
    memory.forget.erase_forgotten(SCOPE)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"hiking" not in path.read_bytes(), path


def test_forgetting_erases_the_text_from_every_file(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, "My address is 12 Baker Street, London.", 5)
    say(memory, "Please send the parcel to 12 Baker Street, London tomorrow.", 4)
    say(memory, "I like tea.", 3)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    message = {"role": "user", "content": "My address is 12 Baker Street, London."}
    (sessions / f"{SCOPE}.json").write_bytes(orjson.dumps({"messages": [message]}))
    (sessions / f"{SCOPE}.log.jsonl").write_bytes(orjson.dumps(message) + b"\n")
    (tmp_path / "memory" / SCOPE / "MEMORY.md").write_text("- Lives at 12 Baker Street, London\n")
    results = tmp_path / "large_tool_results" / SCOPE
    results.mkdir(parents=True)
    (results / "call-1.txt").write_text("route to 12 Baker Street, London: 4 km\n")
    (tmp_path / "console-history").write_text("My address is 12 Baker Street, London.\nhi\n")
    fact = next(
        i
        for i in memory.scopes.store(SCOPE).items.values()
        if i.layer is Layer.SEMANTIC and "Baker" in i.content
    )
    assert memory.forget.forget(SCOPE, fact.id)
    assert memory.forget.scopes_to_erase() == [SCOPE]
    report = memory.forget.erase_forgotten(SCOPE)
    assert memory.forget.scopes_to_erase() == []
    assert report.lines_redacted > 0
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"baker street" not in path.read_bytes().lower(), path
    assert "tea" in pack_text(WorkspaceMemory.open(tmp_path), "what do I like to drink?")
    # The same words from before the forgetting stay out; said again now, they are kept.
    said_again: MemoryItem | None = None
    memory.record.record_turn(
        scope=SCOPE,
        user_text="My address is 12 Baker Street, London.",
        assistant_text="Noted.",
        at=time.time() + 5,
        config=CONFIG,
        tz=UTC,
    )
    said_again = next(
        (i for i in memory.scopes.store(SCOPE).items.values() if "Baker" in i.content), None
    )
    assert said_again is not None


def test_forget_me_wipes_the_scope_and_export_zips_it(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    say(memory, "My favourite colour is teal.", 2)
    data = memory.forget.export_scope(SCOPE)
    assert data[:2] == b"PK" and b"teal" not in data[:0]
    removed = memory.forget.erase_scope(SCOPE)
    assert removed
    assert not (tmp_path / "memory" / SCOPE).exists()
    assert "teal" not in pack_text(memory, "favourite colour?")


def test_eval_updates_counts_current_and_stale_values(tmp_path: Path) -> None:
    from mnemobot_tooling.evals.fact_updates import DATA_FILE, evaluate

    data = orjson.loads(DATA_FILE.read_bytes())
    wanted = {"en-residence-1", "de-employer-1", "ru-residence-1"}
    data["cases"] = [case for case in data["cases"] if case["id"] in wanted]
    cases = tmp_path / "cases.json"
    cases.write_bytes(orjson.dumps(data))
    results = evaluate(cases, tmp_path / "ws")
    assert len(results) == 3
    assert all(r.current and not r.stale for r in results), [r.pack for r in results]


def test_each_move_replaces_the_last_one_across_reloads_and_by_speaker(tmp_path: Path) -> None:
    memory = WorkspaceMemory.open(tmp_path)
    cities = ["Paris", "Berlin", "Oslo", "Lima"]
    for number, city in enumerate(cities):
        say(memory, f"I moved to {city}.", 40 - number * 10)
        if number == 1:
            # Another process wrote the files: the store reads them again, and the
            # index the fact rules keep starts over with it.
            memory.scopes.store(SCOPE).load()
    memory.record.record_turn(
        scope=SCOPE,
        user_text="I live in Quito.",
        assistant_text="Noted.",
        at=NOW - DAY,
        config=CONFIG,
        tz=UTC,
        speaker="Bea",
    )
    durable = [i for i in memory.scopes.store(SCOPE).items.values() if i.layer is Layer.SEMANTIC]
    current = sorted(
        next(c for c in [*cities, "Quito"] if c in i.content)
        for i in durable
        if not i.is_superseded
    )
    # One current city for the user, one for Bea: her statement replaced nobody's.
    assert current == ["Lima", "Quito"]
    replaced_by = {
        next(c for c in cities if c in i.content): i.superseded_by
        for i in durable
        if i.is_superseded
    }
    by_id = {i.id: i for i in durable}
    assert {old: by_id[new].content for old, new in replaced_by.items()} == {
        "Paris": "I moved to Berlin.",
        "Berlin": "I moved to Oslo.",
        "Oslo": "I moved to Lima.",
    }


def test_a_search_shows_the_current_value_first_and_marks_the_one_it_replaced(
    tmp_path: Path,
) -> None:
    # `memory search` (and the memory tool, which searches the same way): the short old
    # statement matched the question's words better and came first, unmarked.
    workspace = tmp_path / "workspace"
    memory = WorkspaceMemory.open(workspace)
    say(memory, "I live in Paris.", 60)
    say(memory, "I moved to Berlin, I live in Berlin now near the park with my two cats.", 10)
    memory.close()
    result = run_mnemobot(
        "memory", "search", "where do I live", "--chat", SCOPE, BOT_WORKSPACE=str(workspace)
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    first_paris = next(n for n, line in enumerate(lines) if "Paris" in line)
    assert all("Berlin" in line for line in lines[:first_paris]) and first_paris > 0
    assert all("(earlier" in line for line in lines if "Paris" in line)
    assert not any("(earlier" in line for line in lines if "Berlin" in line)
    found = orjson.loads(
        run_mnemobot(
            "memory",
            "search",
            "where do I live",
            "--chat",
            SCOPE,
            "--json",
            BOT_WORKSPACE=str(workspace),
        ).stdout
    )
    assert [hit["earlier"] for hit in found] == ["Paris" in hit["content"] for hit in found]


def test_a_move_said_before_a_question_replaces_the_old_city(tmp_path: Path) -> None:
    # Most messages state something and ask about it in one sentence; the move in it is a
    # move all the same, and the old city is no longer where the user lives.
    cases = [
        ("I live in Paris.", "I moved to Berlin, what should I see first?", "Berlin", "Paris"),
        ("Я живу в Казани.", "Я переехал в Самару, что посмотреть в городе?", "Самар", "Казан"),
    ]
    for number, (before, after, new, old) in enumerate(cases):
        memory = WorkspaceMemory.open(tmp_path / str(number))
        say(memory, before, 30)
        say(memory, after, 2)
        durable = [
            i for i in memory.scopes.store(SCOPE).items.values() if i.layer is Layer.SEMANTIC
        ]
        moved = next(i for i in durable if new in i.content)
        assert "?" not in moved.content, moved.content
        left = next(i for i in durable if old in i.content and new not in i.content)
        assert left.superseded_by == moved.id, (after, left)
        for line in fact_lines(pack_text(memory, after)):
            if old in line and new not in line:
                assert "earlier, until" in line, line


def test_a_sentence_of_two_slots_keeps_each_slot_when_one_changes(tmp_path: Path) -> None:
    # Read whole, "I live in Lisbon and I work as a translator" set the home to "Lisbon
    # and I work as a translator" and no job: the move then replaced the job with the home.
    cases = [
        (
            ("I live in Lisbon and I work as a translator.", "I moved to Porto."),
            ("Porto", "Lisbon", "translator"),
            ("Where do I live?", "What do I work as?"),
        ),
        (
            ("Ich wohne in Hamburg und arbeite als Übersetzer.", "Ich bin nach Köln gezogen."),
            ("Köln", "Hamburg", "Übersetzer"),
            ("Wo wohne ich?", "Als was arbeite ich?"),
        ),
        (
            ("Я живу в Москве и работаю в Яндексе.", "Я переехал в Казань."),
            ("Казань", "Москве", "Яндексе"),
            ("Где я живу?", "Где я работаю?"),
        ),
        (
            ("Vivo en Madrid y trabajo como traductor.", "Me mudé a Sevilla."),
            ("Sevilla", "Madrid", "traductor"),
            ("¿Dónde vivo?", "¿En qué trabajo?"),
        ),
    ]
    for number, ((before, after), (new, old, job), (home_question, job_question)) in enumerate(
        cases
    ):
        memory = WorkspaceMemory.open(tmp_path / str(number))
        say(memory, before, 30)
        say(memory, after, 2)
        durable = [
            i for i in memory.scopes.store(SCOPE).items.values() if i.layer is Layer.SEMANTIC
        ]
        current = [i.content for i in durable if not i.is_superseded]
        assert any(new in text for text in current), (before, current)
        assert any(job in text for text in current), (before, current)
        assert not any(old in text for text in current), (before, current)
        assert any(old in i.content for i in durable if i.is_superseded), (before, durable)
        home = fact_lines(pack_text(memory, home_question))
        assert any(new in line and "earlier" not in line for line in home), home
        assert any(old in line for line in home), home
        assert all("earlier, until" in line for line in home if old in line), home
        work = fact_lines(pack_text(memory, job_question))
        assert any(job in line and "earlier" not in line for line in work), work
