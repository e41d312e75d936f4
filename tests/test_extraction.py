"""Rule-based extraction: what a turn leaves in memory, and what it must not."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.items import ItemType, Layer, MemoryItem, TurnMemoryEvent
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.write.extraction import extract_items, split_sentences

SCOPE = "telegram:42"
AT = 1_740_823_200.0


def counter_ids() -> Callable[[], str]:
    numbers = itertools.count()
    return lambda: f"id{next(numbers)}"


def extract(
    user: str,
    assistant: str = "",
    *,
    speaker: str | None = None,
    code_aware: bool = True,
    tool_outputs: list[str] | None = None,
    refs: list[str] | None = None,
) -> list[MemoryItem]:
    event = TurnMemoryEvent(
        scope=SCOPE,
        chat_key=SCOPE,
        user_text=user,
        assistant_text=assistant,
        at=AT,
        tool_outputs=tool_outputs or [],
        message_refs=refs if refs is not None else ["m17"],
        speaker=speaker,
    )
    return extract_items(event, code_aware=code_aware, id_factory=counter_ids())


def derived(items: list[MemoryItem]) -> list[MemoryItem]:
    return [i for i in items if "turn" not in i.tags]


def only(items: list[MemoryItem], item_type: ItemType) -> list[MemoryItem]:
    return [i for i in derived(items) if i.type is item_type]


# ------------------------------------------------------------------ the turn item


def test_every_turn_leaves_one_episode_with_both_sides() -> None:
    items = extract("Can you suggest a name for my cat?", "How about Miso?", refs=["m1", "m2"])
    [turn] = [i for i in items if "turn" in i.tags]
    assert items[0] is turn
    assert turn.type is ItemType.TURN
    assert turn.layer is Layer.EPISODIC
    assert turn.confidence == 0.65
    assert turn.content == "User: Can you suggest a name for my cat?\nAssistant: How about Miso?"
    assert turn.title == "Can you suggest a name for my cat?"
    assert turn.references == ["m1", "m2"]
    assert turn.scope == SCOPE
    assert turn.created_at == AT
    assert "question" in turn.tags


def test_a_long_message_is_kept_whole_in_pieces_and_the_reply_is_cut() -> None:
    user = "\n".join(f"Line {n} tells a long story about the garden." for n in range(200))
    turn, *rest = [i for i in extract(user, "Sounds lovely. " * 300) if i.type is ItemType.TURN]
    user_part, assistant_part = turn.content.split("\nAssistant: ")
    assert 600 < len(user_part) < 1300
    assert len(assistant_part) < 900
    assert "\n" not in turn.title and len(turn.title) <= 81
    # Every line the user wrote is in one of the pieces, the last one included.
    pieces = [user_part] + [item.content for item in rest]
    assert all(p.startswith(("User: ", "User (continued): ")) for p in pieces)
    assert all(len(p) < 1300 for p in pieces)
    kept = "\n".join(pieces)
    assert all(f"Line {n} tells" in kept for n in range(200))
    assert all(item.references == turn.references and item.created_at == AT for item in rest)


def test_greetings_and_thanks_leave_nothing() -> None:
    assert extract("hello", "Hi! How can I help?") == []
    assert extract("ok thanks!", "You're welcome.") == []
    assert extract("   ", "") == []


def test_speaker_stays_attached_so_my_is_attributable() -> None:
    items = extract("I have a dog named Rex. He is four.", speaker="Caroline")
    turn = items[0]
    assert turn.content.startswith("Caroline: I have a dog named Rex.")
    assert turn.title.startswith("Caroline: ")
    assert "speaker:caroline" in turn.tags
    [fact] = only(items, ItemType.PROJECT_FACT)
    assert fact.content == "Caroline: I have a dog named Rex."
    assert "speaker:caroline" in fact.tags


# ---------------------------------------------------------- statements of the user


@pytest.mark.parametrize(
    ("text", "item_type", "sentence"),
    [
        (
            "Long day at work today. Anyway, I prefer oat milk in my coffee. What's new?",
            ItemType.PREFERENCE,
            "Anyway, I prefer oat milk in my coffee.",
        ),
        ("Ugh, Mondays. I really hate cilantro, it tastes like soap.", ItemType.PREFERENCE,
         "I really hate cilantro, it tastes like soap."),
        ("Random thought: my favourite band is Radiohead!", ItemType.PREFERENCE,
         "Random thought: my favourite band is Radiohead!"),
        ("Hi there. My sister lives in Oslo with her husband.", ItemType.PROJECT_FACT,
         "My sister lives in Oslo with her husband."),
        ("Quick intro: I work at Siemens as a data engineer.", ItemType.PROJECT_FACT,
         "Quick intro: I work at Siemens as a data engineer."),
        ("Heads up. I'm allergic to peanuts.", ItemType.PROJECT_FACT, "I'm allergic to peanuts."),
        ("Fun fact: I have a dog named Rex.", ItemType.PROJECT_FACT,
         "Fun fact: I have a dog named Rex."),
        ("Mark the calendar. My birthday is on March 3rd.", ItemType.PROJECT_FACT,
         "My birthday is on March 3rd."),
        ("After a long debate we decided to use Postgres for the user store.",
         ItemType.DECISION, "After a long debate we decided to use Postgres for the user store."),
        ("Both work. Let's go with FastAPI for the backend.", ItemType.DECISION,
         "Let's go with FastAPI for the backend."),
        ("Status update. I'm working on the parser rewrite.", ItemType.TASK_STATE,
         "I'm working on the parser rewrite."),
        ("Parser is done. Next I will add integration tests.", ItemType.TASK_STATE,
         "Next I will add integration tests."),
        ("Good progress.\nTODO: migrate the sessions table.", ItemType.TASK_STATE,
         "TODO: migrate the sessions table."),
        # Orders to the assistant are the user's requests; rules of their world are facts.
        ("One more thing. Please never push directly to main.", ItemType.PREFERENCE,
         "Please never push directly to main."),
        ("Thanks. Always answer in French from now on.", ItemType.PREFERENCE,
         "Always answer in French from now on."),
        ("Reminder: all tests must pass before a merge.", ItemType.PROJECT_FACT,
         "Reminder: all tests must pass before a merge."),
    ],
)  # fmt: skip
def test_each_statement_kind_keeps_the_whole_sentence_that_matched(
    text: str, item_type: ItemType, sentence: str
) -> None:
    items = extract(text)
    found = only(items, item_type)
    assert [i.content for i in found] == [sentence]
    [item] = found
    assert item.layer is Layer.EPISODIC
    assert item.confidence >= 0.8  # explicit first-person statements get promoted
    assert item.references == ["m17"]
    assert item.source == "user"
    assert item.title.endswith(sentence[:40]) or sentence[:40] in item.title


def test_several_statements_in_one_message_each_become_an_item() -> None:
    items = extract(
        "I'm Sam. I work at a bakery in Lyon. I love sourdough. "
        "We decided to open on Sundays. Don't send me emails after 8pm."
    )
    kinds = sorted(i.type.value for i in derived(items))
    assert kinds == ["DECISION", "PREFERENCE", "PREFERENCE", "PROJECT_FACT"]


def test_hedged_statements_stay_below_the_promotion_threshold() -> None:
    for text in (
        "I think I like jazz more than rock.",
        "Maybe I prefer the window seat.",
        "I guess my favourite colour is green.",
    ):
        [item] = derived(extract(text))
        assert item.confidence < 0.75, text
        assert "hedged" in item.tags


@pytest.mark.parametrize(
    "text",
    [
        "Do you like jazz?",
        "do you like jazz",
        "What's your favourite band?",
        "Would you prefer tea or coffee?",
        "I like it!",
        "I love that!",
        "I love this so much, thanks!",
        "I love how it looks!",
        "I'd like to know how to cook rice.",
        "I would love to hear more about it.",
        "If you like jazz, you'll love this.",
        "Don't worry about it!",
        "Never mind.",
        "Always happy to help!",
        "Never heard of it, sounds fun.",
        "That must have been an incredible feeling!",
        "You must be so proud.",
        "You have to try the new ramen place!",
        "I have to pick up my kids at 5.",
        "I failed my driving test yesterday lol",
        "It turned out to be a lot of fun.",
        "How do I fix this?",
        "Should we go with Postgres?",
        "Fixed it!",
    ],
)
def test_small_talk_and_questions_derive_nothing(text: str) -> None:
    assert derived(extract(text)) == []


def test_constraints_and_facts_are_only_taken_from_the_user() -> None:
    items = extract(
        "Tell me about coffee.", "I prefer dark roast. You must try it. I live in Oslo."
    )
    assert derived(items) == []


def test_failures_and_fixes_in_prose_without_code_awareness() -> None:
    items = extract(
        "The nightly build failed with ImportError: cannot import name 'x'. "
        "We fixed it by pinning numpy to 1.26 in the lock file.",
        code_aware=False,
    )
    [failure] = only(items, ItemType.FAILURE)
    [fix] = only(items, ItemType.FIX)
    assert failure.content == "The nightly build failed with ImportError: cannot import name 'x'."
    assert fix.content == "We fixed it by pinning numpy to 1.26 in the lock file."
    assert fix.confidence >= 0.8 and "confirmed" in fix.tags
    assert "importerror" in failure.tags
    assert only(items, ItemType.COMMAND_RESULT) == []
    assert all(not r.startswith("file:") for i in items for r in i.references)


def test_a_fix_suggested_by_the_assistant_is_not_trusted_as_much() -> None:
    items = extract(
        "My deploy keeps timing out.",
        "The fix is to raise the gunicorn timeout to 120 seconds in the service config.",
    )
    [fix] = only(items, ItemType.FIX)
    assert fix.confidence < 0.75
    assert fix.source == "assistant"
    assert "suggested" in fix.tags


def test_sentences_split_around_abbreviations_numbers_and_file_names() -> None:
    text = (
        "Dr. Smith ran v2.5 of app.py, e.g. with Mr. Jones. It failed! Why? "
        "J. R. R. Tolkien wrote it.\n- never push\n1. Always test"
    )
    assert split_sentences(text) == [
        "Dr. Smith ran v2.5 of app.py, e.g. with Mr. Jones.",
        "It failed!",
        "Why?",
        "J. R. R. Tolkien wrote it.",
        "never push",
        "Always test",
    ]
    assert split_sentences("你好。再见！") == ["你好。", "再见！"]


# -------------------------------------------------------------------- code-aware

TRACEBACK_TURN = (
    "Running the tests gives me this:\n"
    "```\n"
    "Traceback (most recent call last):\n"
    '  File "/home/ana/shop/app/main.py", line 3, in <module>\n'
    "    import requests\n"
    "ModuleNotFoundError: No module named 'requests'\n"
    "```\n"
    "What's wrong?"
)
TRACEBACK_ANSWER = (
    "The `requests` package is not installed in your virtualenv. Install the package first:\n"
    "```sh\n"
    "pip install requests\n"
    "```\n"
    "Then run `pytest tests/test_api.py` again."
)


def test_a_traceback_and_the_suggested_commands_become_failure_and_fix() -> None:
    items = extract(TRACEBACK_TURN, TRACEBACK_ANSWER)
    [failure] = only(items, ItemType.FAILURE)
    assert failure.content.startswith("ModuleNotFoundError: No module named 'requests'")
    assert "file:/home/ana/shop/app/main.py" in failure.references
    assert "m17" in failure.references
    assert "file:main.py" in failure.tags and "modulenotfounderror" in failure.tags
    assert failure.confidence >= 0.8

    [fix] = only(items, ItemType.FIX)
    assert fix.content.startswith("Fix for `ModuleNotFoundError: No module named 'requests'`:")
    assert "$ pip install requests" in fix.content
    assert fix.content.index("pip install") < fix.content.index("pytest tests/test_api.py")
    assert "file:tests/test_api.py" in fix.references
    assert {"pip", "pytest", "suggested"} <= set(fix.tags)
    turn = items[0]
    assert "file:main.py" in turn.tags and "code" in turn.tags


def test_commands_the_user_ran_and_their_errors() -> None:
    items = extract(
        "I ran this:\n"
        "```console\n"
        "$ git push origin main\n"
        "error: failed to push some refs to 'github.com:me/shop.git'\n"
        "$ git pull --rebase\n"
        "```\n"
        "The fix was to rebase on origin/main first, then the push went through."
    )
    [failure] = only(items, ItemType.FAILURE)
    assert failure.content == (
        "`git push origin main` failed: error: failed to push some refs to 'github.com:me/shop.git'"
    )
    [command] = only(items, ItemType.COMMAND_RESULT)
    assert command.content.endswith("$ git pull --rebase")
    assert "git" in command.tags and command.confidence >= 0.8
    [fix] = only(items, ItemType.FIX)
    assert fix.content.startswith("Fix for `error: failed to push some refs")
    assert "rebase on origin/main first" in fix.content
    assert fix.confidence >= 0.8


def test_commands_in_prose_inline_code_and_prompts() -> None:
    items = extract(
        "Setup notes: I installed deps with pip install -r requirements.txt and then ran "
        "`ruff check memory/` before committing.\n$ docker compose up -d",
    )
    commands = [i.content for i in only(items, ItemType.COMMAND_RESULT)]
    assert commands == [
        "$ pip install -r requirements.txt",
        "$ ruff check memory/",
        "$ docker compose up -d",
    ]
    pip = only(items, ItemType.COMMAND_RESULT)[0]
    assert "file:requirements.txt" in pip.references and "file:requirements.txt" in pip.tags


def test_paths_are_files_not_urls_or_words() -> None:
    items = extract(
        "Tests must keep passing for config/settings.toml and ~/shop/.env, "
        "see https://github.com/me/shop/blob/main/x.py and/or Node.js docs."
    )
    [rule] = only(items, ItemType.PROJECT_FACT)
    files = [r for r in rule.references if r.startswith("file:")]
    assert files == ["file:config/settings.toml", "file:~/shop/.env"]


def test_tool_output_errors_are_failures_from_the_tool() -> None:
    items = extract(
        "List the data folder please.",
        "The folder does not exist.",
        tool_outputs=["$ ls data\nls: cannot access 'data': No such file or directory"],
    )
    [failure] = only(items, ItemType.FAILURE)
    assert (
        failure.content == "`ls data` failed: ls: cannot access 'data': No such file or directory"
    )
    assert failure.source == "tool"


def test_without_code_awareness_code_is_not_mined() -> None:
    items = extract(TRACEBACK_TURN, TRACEBACK_ANSWER, code_aware=False)
    assert only(items, ItemType.COMMAND_RESULT) == []
    assert only(items, ItemType.FIX) == []
    assert all(not r.startswith("file:") for i in items for r in i.references)


# ------------------------------------------------------- through the store


def test_extracted_statements_are_promoted_and_a_forgotten_one_stays_forgotten(
    workspace: Path,
) -> None:
    paths = ScopePaths(workspace, SCOPE)
    store = ScopeItemStore(paths)
    store.load()
    text = "I prefer window seats on long flights. I think I like jazz."
    store.add(extract(text))
    promoted = store.auto_promote(0.75)
    assert [p.content for p in promoted] == ["I prefer window seats on long flights."]
    assert promoted[0].layer is Layer.SEMANTIC
    assert paths.semantic_file.is_file()

    assert store.forget(promoted[0].id)
    # The same sentence said again next week: not remembered again, before or after reload.
    assert all("window seats" not in i.content for i in store.add(derived(extract(text))))
    reloaded = ScopeItemStore(paths)
    reloaded.load()
    reloaded.add(extract(text))
    reloaded.auto_promote(0.75)
    assert not any(
        i.type is ItemType.PREFERENCE and "window seats" in i.content
        for i in reloaded.items.values()
    )
