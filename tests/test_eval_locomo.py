"""`mnemobot eval locomo`: ingest a LoCoMo-format file and report evidence recall."""

from __future__ import annotations

import contextlib
from pathlib import Path

import orjson
import pytest

from mnemobot.bot.cli.main import main
from mnemobot_tooling.evals.locomo import load_conversations, parse_session_time, run_eval
from tests.terminal import run_with_terminal_stderr

TINY = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Alice", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit!"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Congrats! What breed is it?"},
                {
                    "speaker": "Alice",
                    "dia_id": "D1:3",
                    "text": "A golden retriever.",
                    "blip_caption": "a photo of a dog on a sofa",
                },
            ],
            "session_2_date_time": "10:15 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "I started learning the cello."},
                {"speaker": "Alice", "dia_id": "D2:2", "text": "Nice! How is it going?"},
                {"speaker": "Bob", "dia_id": "D2:3", "text": "Slowly, my teacher is patient."},
            ],
        },
        "qa": [
            {"question": "What is the name of Alice's puppy?", "evidence": ["D1:1"], "category": 4},
            # One real id, one unknown, one malformed: only D1:3 counts.
            {
                "question": "What breed is Alice's puppy?",
                "evidence": ["D1:3", "D7:1", "D1"],
                "category": 1,
            },
            {
                "question": "When did Bob start learning the cello?",
                "evidence": ["D2:1"],
                "category": 2,
            },
            {"question": "Is Bob a drummer?", "answer": "no", "evidence": [], "category": 5},
        ],
    }
]


@pytest.fixture()
def tiny_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_bytes(orjson.dumps(TINY))
    return path


def test_session_dates_and_turns_are_read(tiny_file: Path) -> None:
    assert parse_session_time("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    (conversation,) = load_conversations(tiny_file)
    assert [t.dia_id for t in conversation.turns] == [
        "D1:1",
        "D1:2",
        "D1:3",
        "D2:1",
        "D2:2",
        "D2:3",
    ]
    assert (
        conversation.turns[2].text
        == "A golden retriever. [shares a photo: a photo of a dog on a sofa]"
    )
    assert conversation.turns[1].at > conversation.turns[0].at
    assert [q.category for q in conversation.questions] == [4, 1, 2]
    assert conversation.questions[1].evidence == ("D1:3",)
    assert conversation.skipped_evidence == 2


def test_recall_at_the_default_budget_finds_all_evidence(tiny_file: Path, tmp_path: Path) -> None:
    result = run_eval(tiny_file, tmp_path / "ws", budget=None)
    data = result.to_json_dict()
    assert data["budget"] == 1800 and data["maxBudget"] == 3500
    assert data["questions"] == 3
    assert data["skippedEvidence"] == 2
    assert data["pack"]["overall"] == 1.0
    assert data["bm25"]["overall"] == 1.0
    assert data["newestFirst"]["overall"] == 1.0
    # Every item written from a turn carries its dia_id, so the pack's are resolvable.
    items = (tmp_path / "ws" / "memory" / "locomo:tiny-1" / "items").rglob("*.jsonl")
    for path in items:
        for line in path.read_bytes().splitlines():
            references = orjson.loads(line)["references"]
            assert any(ref.startswith("D") for ref in references)


def test_recall_on_a_tight_budget_per_category_and_baselines(
    tiny_file: Path, tmp_path: Path
) -> None:
    result = run_eval(tiny_file, tmp_path / "ws", budget=70)
    data = result.to_json_dict()
    assert data["pack"]["perCategory"] == {
        "multi-hop": 1.0,
        "temporal": 1.0,
        "open-domain": 0.0,
        "single-hop": 1.0,
    }
    assert data["pack"]["overall"] == pytest.approx(1.0, abs=1e-4)
    # Three ~21-token turns fit (every run pays what the pack pays for a dated line). The
    # breed answer, a reply sharing no query word but the name, comes into the pack as
    # the answer to the matching question before it; both BM25 baselines spend the
    # budget elsewhere and miss it; newest-first holds only the last session, so it finds
    # the cello turn alone.
    assert data["bm25"]["overall"] == pytest.approx(2 / 3, abs=1e-4)
    assert data["bm25Windows"]["overall"] == pytest.approx(2 / 3, abs=1e-4)
    assert data["newestFirst"]["perCategory"]["temporal"] == 1.0
    assert data["newestFirst"]["overall"] == pytest.approx(1 / 3, abs=1e-4)
    assert data["newestFirst"]["evidenceFound"] == 1
    assert data["packTokensMax"] <= data["maxBudget"]


def test_cli_prints_json_and_a_report(tiny_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "locomo", str(tiny_file), "--json", "--budget", "60"]) == 0
    captured = capsys.readouterr()
    data = orjson.loads(captured.out)
    assert data["pack"]["overall"] == pytest.approx(1.0, abs=1e-4)
    assert data["seconds"] >= 0
    # Captured stderr is no terminal: no progress frames in it.
    assert "\r" not in captured.err

    assert main(["eval", "locomo", str(tiny_file)]) == 0
    text = capsys.readouterr().out
    assert "memory pack" in text and "bm25 turns" in text and "newest first" in text
    assert "bm25+ windows" in text and "30 s between turns" in text
    assert "time taken:" in text


def test_turn_gap_sets_the_spacing_of_turns_and_is_checked(
    tiny_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = load_conversations(tiny_file, 300)[0].turns
    assert (turns[1].at - turns[0].at).total_seconds() == 300
    assert main(["eval", "locomo", str(tiny_file), "--turn-gap-seconds", "-5"]) == 2
    assert "--turn-gap-seconds must be 0 or more" in capsys.readouterr().err


def test_an_ablation_changes_a_constant_of_the_pack_and_is_checked(
    tiny_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["eval", "locomo", str(tiny_file), "--json", "--budget", "70"]
    assert main(args) == 0
    with_neighbours = orjson.loads(capsys.readouterr().out)
    # Without the turns around each hit, "What breed is Alice's puppy?" no longer finds
    # the answer ("A golden retriever.", the turn after the match): recall drops.
    no_neighbours = '{"ranking": {"turnsAroundHits": 0, "neighbourRelevanceShare": 0}}'
    assert main([*args, "--tuning", no_neighbours]) == 0
    without = orjson.loads(capsys.readouterr().out)
    assert without["questions"] == with_neighbours["questions"] == 3
    assert without["pack"]["overall"] < with_neighbours["pack"]["overall"]
    for bad, why in [
        ('{"ranking": {"turnsAroundHits": "two"}}', "--tuning: ranking.turnsAroundHits: a whole"),
        ('{"ranking": {"turnsAroundHit": 0}}', "--tuning: ranking.turnsAroundHit: no such"),
        ('{"memory": {}}', '--tuning: memory: give "ranking" or "extraction"'),
        ("[1]", "--tuning: must be a JSON object"),
        # A constant is no memory setting: the old way says where it went.
        ('{"ranking": {"turnsAroundHits": 0}}', "a tuning constant goes in --tuning"),
    ]:
        flag = "--memory" if why.startswith("a tuning") else "--tuning"
        assert main([*args, flag, bad]) == 2
        err = capsys.readouterr().err
        assert why in err and len(err.strip().splitlines()) == 1, err
    assert main([*args, "--memory", "[1]"]) == 2
    assert "--memory must be a JSON object" in capsys.readouterr().err


def test_cli_refuses_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "locomo", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_stops_with_one_line_when_memory_cannot_be_written(
    tiny_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A file where the conversation's memory directory would go: every write fails.
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "locomo:tiny-1").write_text("")
    code = main(["eval", "locomo", str(tiny_file), "--workspace", str(workspace)])
    assert code == 1
    err = capsys.readouterr().err
    assert "cannot evaluate" in err and "memory write failed at D1:1 of locomo:tiny-1" in err
    assert "Traceback" not in err


def test_eval_with_stderr_redirected_to_a_file_writes_no_progress(
    tiny_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "eval.log"
    with log.open("w") as stderr, contextlib.redirect_stderr(stderr):
        assert main(["eval", "locomo", str(tiny_file), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["questions"] == 3
    assert "\r" not in log.read_text()


def test_eval_on_a_terminal_shows_progress(tiny_file: Path) -> None:
    returncode, stdout, stderr = run_with_terminal_stderr(
        "eval", "locomo", str(tiny_file), "--json"
    )
    assert returncode == 0, stderr[-2000:]
    assert orjson.loads(stdout)["questions"] == 3
    assert "\r[" in stderr and "100.0%" in stderr
    assert "\r" not in stdout
