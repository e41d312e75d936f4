"""`mnemobot eval beam`: a BEAM-shaped conversation, made here, imported as a Telegram
export and questioned; the figures follow from how the conversation is built."""

from __future__ import annotations

import contextlib
import io
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from mnemobot.bot.cli.main import main
from mnemobot_tooling.evals.beam import BeamRun, run_eval
from mnemobot_tooling.evals.beam_data import load_conversation, telegram_export
from mnemobot_tooling.evals.chunk_baseline import split_chunks

# Lines that share no term with any question below (and none with each other's topic).
FILLERS = [
    "Lunch today was a bowl of {n} lentil soups.",
    "The tram near the harbour was late by {n} minutes again.",
    "I watered {n} tomato plants on the balcony this morning.",
    "My sister phoned about the {n} concert tickets she bought.",
    "The bakery sold out of rye loaves before {n} o'clock.",
    "Drizzle kept falling over the park for {n} hours.",
]


def _filler(count: int, start: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if (start + k) % 2 == 0 else "assistant",
            "id": start + k,
            "content": FILLERS[(start + k) % len(FILLERS)].format(n=start + k),
        }
        for k in range(count)
    ]


def beam_chat() -> list[dict[str, Any]]:
    """Two dated sessions. The hits of the questions (0, 1, 8, 9) are far (> 2 messages)
    from message 22, which shares no term with any question and is not among the newest."""
    first = [
        {
            "role": "user",
            "id": 0,
            "time_anchor": "March-15-2024",
            "content": "My cat is named Zorblax. ->-> 1,1",
        },
        {"role": "assistant", "id": 1, "content": "Zorblax is a lovely name for a cat."},
        *_filler(6, 2),
        {"role": "user", "id": 8, "content": "The build server runs Quokkadb version 7. ->-> 1,2"},
        {"role": "assistant", "id": 9, "content": "Noted: the build server is on Quokkadb 7."},
        *_filler(6, 10),
    ]
    second = [
        {**_filler(1, 16)[0], "time_anchor": "April-02-2024"},
        *_filler(5, 17),
        {
            "role": "user",
            "id": 22,
            "content": "Upgrade finished: we are on the ninth release now. ->-> 2,1",
        },
        *_filler(18, 23),
    ]
    return [
        {"batch_number": 1, "time_anchor": None, "turns": [first[:2], first[2:]]},
        {"batch_number": 2, "time_anchor": None, "turns": [second]},
    ]


QUESTIONS = {
    "information_extraction": [{"question": "What is my cat named?", "source_chat_ids": [0]}],
    "knowledge_update": [
        {
            "question": "Which Quokkadb version does the build server run?",
            "source_chat_ids": {"original_info": [8], "updated_info": [22]},
        }
    ],
    # 999 names no message: left out of the question.
    "summarization": [
        {"question": "Summarize what I told you about my cat.", "source_chat_ids": [0, 1, 999]}
    ],
    "temporal_reasoning": [
        {
            "question": "How long after naming my cat did I mention the build server?",
            "source_chat_ids": {"first_event": [0], "second_event": [[8]]},
        }
    ],
    "abstention": [{"question": "What is my dog called?", "ideal_response": "unknown"}],
}


@pytest.fixture()
def conversation_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "beam" / "100K" / "7"
    (directory / "probing_questions").mkdir(parents=True)
    (directory / "chat.json").write_bytes(orjson.dumps(beam_chat()))
    (directory / "probing_questions" / "probing_questions.json").write_bytes(
        orjson.dumps(QUESTIONS)
    )
    return directory


def test_the_conversation_is_read_dated_and_exported_as_telegram_would(
    conversation_dir: Path,
) -> None:
    conversation = load_conversation(conversation_dir)
    assert [m.id for m in conversation.messages] == list(range(41))
    assert conversation.messages[0].text == "My cat is named Zorblax."
    assert conversation.messages[0].at.isoformat() == "2024-03-15T09:00:00+00:00"
    assert (conversation.messages[1].at - conversation.messages[0].at).total_seconds() == 60
    assert conversation.messages[16].at.isoformat() == "2024-04-02T09:00:00+00:00"
    assert conversation.skipped_evidence == 1 and conversation.without_evidence == 1
    by_ability = {q.ability: q for q in conversation.questions}
    assert by_ability["summarization"].evidence == (0, 1)
    assert by_ability["temporal_reasoning"].evidence == (0, 8)
    assert (by_ability["knowledge_update"].older, by_ability["knowledge_update"].newer) == (
        (8,),
        (22,),
    )
    export = telegram_export(conversation)
    first = export["messages"][0]
    assert (first["id"], first["from"], first["date"]) == (1, "User", "2024-03-15T09:00:00")
    assert export["messages"][1]["from"] == "Assistant"
    assert not any("->->" in m["text"] for m in export["messages"])


def test_recall_per_ability_and_stale_only_follow_from_the_construction(
    conversation_dir: Path, tmp_path: Path
) -> None:
    details = io.StringIO()
    result = run_eval(BeamRun([conversation_dir.parent], details=details), tmp_path / "ws")
    data = result.to_json_dict()
    assert data["conversations"] == ["100K/7"]
    assert (data["messages"], data["questions"]) == (41, 4)
    assert (data["skippedEvidence"], data["questionsWithoutEvidence"]) == (1, 1)
    (at_default,) = data["budgets"]
    assert (at_default["budget"], at_default["maxBudget"]) == (1800, 3500)
    for run in ("pack", "baseline"):
        figures = at_default[run]
        # Every evidence message that shares a term with its question is found; message
        # 22 (the update) shares none and is far from every hit: half of that question.
        assert figures["perAbility"] == {
            "information_extraction": 1.0,
            "knowledge_update": 0.5,
            "temporal_reasoning": 1.0,
            "summarization": 1.0,
        }, run
        assert figures["overall"] == pytest.approx(3.5 / 4, abs=1e-4)
        assert (figures["evidenceFound"], figures["evidenceTotal"]) == (6, 7)
        # The old version is in the pack, the update is not.
        assert (figures["staleOnly"], figures["updatesJudged"]) == (1, 1)
    # The baseline never spends more than the pack did.
    assert at_default["baselineTokensMean"] <= at_default["packTokensMean"]
    lines = [orjson.loads(line) for line in details.getvalue().splitlines()]
    update = next(line for line in lines if line["ability"] == "knowledge_update")
    assert (update["evidence"], update["pack"], update["baseline"]) == ([8, 22], [8], [8])
    # The import wrote the export's refs: tg-export:N is BEAM message N-1.
    imported = tmp_path / "ws" / "memory" / "beam:100K-7" / "imported-messages.txt"
    assert imported.read_text().split()[:2] == ["tg-export:1", "tg-export:2"]


def test_a_budget_too_small_for_a_line_finds_nothing_in_pack_or_baseline(
    conversation_dir: Path, tmp_path: Path
) -> None:
    # The cheapest pack line costs 20 tokens, so a pack within 10 (max 20) holds at most
    # one line, one message; the baseline gets the same tokens: one chunk at most.
    result = run_eval(BeamRun([conversation_dir], budgets=[10, 1800]), tmp_path / "ws")
    tight, default = result.budgets
    assert (tight.budget, tight.max_budget, default.budget) == (10, 20, 1800)
    assert max(tight.pack_tokens) <= 20 and max(tight.baseline_tokens) <= 20
    assert tight.pack.found <= 4 and tight.baseline.found <= 4
    assert default.pack.found == 6


def test_chunks_are_at_most_600_characters_and_lose_no_word() -> None:
    text = ("word " * 100 + "\n") * 5 + "x" * 1300
    chunks = split_chunks(text)
    assert all(len(chunk) <= 600 for chunk in chunks)
    # Cut at line ends, then spaces, then anywhere: every character but the blanks kept.
    assert "".join("".join(chunks).split()) == "".join(text.split())
    assert chunks[0] == ("word " * 100).strip()  # the line end in its second half
    assert chunks[-1] == "x" * 100  # 1300 unbroken characters: 600, 600, 100


def test_command_line_prints_json_and_one_line_for_a_wrong_path(
    conversation_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "beam", str(conversation_dir), "--json", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert orjson.loads(out)["budgets"][0]["pack"]["overall"] == pytest.approx(0.875)
    with contextlib.suppress(SystemExit):
        code = main(["eval", "beam", str(tmp_path / "nothing-here")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "nothing-here" in err and "Traceback" not in err


def test_as_a_chat_with_a_bot_a_reply_shares_the_turn_of_the_message_it_answers(
    conversation_dir: Path, tmp_path: Path
) -> None:
    """The conversation is exported as Telegram Desktop writes a chat with a bot, and
    `memory import` keeps the bot's messages as replies without being told."""
    result = run_eval(BeamRun([conversation_dir]), tmp_path / "ws")
    (at_default,) = result.to_json_dict()["budgets"]
    assert result.to_json_dict()["assistantReplies"] is True
    # The same evidence is found: one turn now holds message 0 and its reply 1.
    assert at_default["pack"]["perAbility"] == {
        "information_extraction": 1.0,
        "knowledge_update": 0.5,
        "temporal_reasoning": 1.0,
        "summarization": 1.0,
    }
    items = tmp_path / "ws" / "memory" / "beam:100K-7" / "items"
    references = [
        orjson.loads(line)["references"]
        for path in items.rglob("*.jsonl")
        for line in path.read_bytes().splitlines()
        if orjson.loads(line).get("type") == "TURN"
    ]
    assert ["tg-export:1", "tg-export:2"] in references
    assert ["tg-export:9", "tg-export:10"] in references
    # Message 22 (a user message) is answered by filler 23: one turn, refs of both.
    assert ["tg-export:23", "tg-export:24"] in references

    apart = run_eval(BeamRun([conversation_dir], assistant_replies=False), tmp_path / "ws2")
    assert apart.to_json_dict()["assistantReplies"] is False
    items = tmp_path / "ws2" / "memory" / "beam:100K-7" / "items"
    references = [
        orjson.loads(line)["references"]
        for path in items.rglob("*.jsonl")
        for line in path.read_bytes().splitlines()
        if orjson.loads(line).get("type") == "TURN"
    ]
    assert ["tg-export:1"] in references and ["tg-export:2"] in references
    assert ["tg-export:1", "tg-export:2"] not in references


def test_a_message_longer_than_an_export_holds_is_imported_in_parts_of_one_message(
    tmp_path: Path,
) -> None:
    # BEAM's 500K chats hold replies of up to 246,463 characters; `memory import` refuses a
    # text over 8,192, so the whole conversation could not be evaluated.
    chat = beam_chat()
    long_reply = " ".join(f"Part {n} of the long plan." for n in range(2_000))
    long_reply += " The Zorblax feeding schedule is at the very end."
    chat[0]["turns"][0][1]["content"] = long_reply
    directory = tmp_path / "beam" / "500K" / "3"
    (directory / "probing_questions").mkdir(parents=True)
    (directory / "chat.json").write_bytes(orjson.dumps(chat))
    questions = {
        "information_extraction": [
            {"question": "What about the Zorblax feeding schedule?", "source_chat_ids": [1]}
        ]
    }
    (directory / "probing_questions" / "probing_questions.json").write_bytes(
        orjson.dumps(questions)
    )
    conversation = load_conversation(directory, 60.0)
    parts = [m for m in telegram_export(conversation)["messages"] if m["id"] % 10_000_000 == 2]
    assert len(parts) == 7 and all(len(p["text"]) <= 8_192 for p in parts)
    assert " ".join(p["text"] for p in parts) == long_reply
    result = run_eval(BeamRun([directory]), tmp_path / "ws").to_json_dict()
    # Found through a later part, counted as the one message it is.
    assert result["budgets"][0]["pack"]["overall"] == 1.0


def test_a_kept_workspace_is_asked_again_without_a_second_import(
    conversation_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    first = run_eval(BeamRun([conversation_dir]), workspace)
    # Without --reuse-import a kept workspace is refused: the scope holds memory already.
    args = ["eval", "beam", str(conversation_dir), "--json", "--no-progress"]
    assert main([*args, "--workspace", str(workspace)]) == 1
    assert "already holds memory" in capsys.readouterr().err
    assert main([*args, "--workspace", str(workspace), "--reuse-import"]) == 0
    again = orjson.loads(capsys.readouterr().out)
    assert again["budgets"][0]["pack"] == first.to_json_dict()["budgets"][0]["pack"]
    imported = workspace / "memory" / "beam:100K-7" / "imported-messages.txt"
    assert len(imported.read_text().split()) == 41  # each message once
    assert main([*args, "--reuse-import"]) == 2
    assert "--workspace" in capsys.readouterr().err


def test_two_imports_of_one_conversation_give_the_same_items_in_the_same_order(
    conversation_dir: Path, tmp_path: Path
) -> None:
    # Items that score alike are ordered by id; ids drawn at random made two imports of
    # the same code differ by up to 0.005 on the development chats.
    packs = []
    for name in ("one", "two"):
        details = io.StringIO()
        run_eval(BeamRun([conversation_dir], details=details), tmp_path / name)
        packs.append([orjson.loads(line)["packItems"] for line in details.getvalue().splitlines()])
    assert packs[0] == packs[1]
    assert any(packs[0])
    # The bot's own ids are random again afterwards.
    assert uuid.uuid4() != uuid.uuid4()
