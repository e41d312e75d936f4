"""What the model sees of the stored session (pure functions)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemobot.base.tokens import estimate_tokens
from mnemobot.systems.model_call.request_messages import (
    MAX_MODEL_MESSAGE_TOKENS,
    STUB_PREFIX,
    fit_message,
    is_cut,
    model_messages,
)


def history_with_tools(turns: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(turns):
        out += [
            {"role": "user", "content": f"u{i}", "at": "2026-01-01T00:00:00Z"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "t", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "name": "t", "content": f"r{i} " + "x" * 500},
            {"role": "assistant", "content": f"a{i}"},
        ]
    return out


def test_old_tool_results_are_stubbed_recent_ones_kept_and_extra_keys_dropped() -> None:
    messages = model_messages("sys", history_with_tools(6), keep_tool_results_turns=2)
    tools = [m["content"] for m in messages if m["role"] == "tool"]
    assert [t.startswith(STUB_PREFIX) for t in tools] == [True] * 4 + [False] * 2
    assert tools[0].endswith("r0 " + "x" * 117)
    assert all("at" not in m for m in messages)
    assert messages[0] == {"role": "system", "content": "sys"}


def test_a_summary_at_the_head_joins_the_system_prompt() -> None:
    history = [{"role": "system", "content": "[Conversation summary]\nS"}, *history_with_tools(1)]
    messages = model_messages("base", history, keep_tool_results_turns=3)
    assert messages[0] == {"role": "system", "content": "base\n\n[Conversation summary]\nS"}
    assert sum(1 for m in messages if m["role"] == "system") == 1


def test_tool_calls_left_unanswered_by_a_stopped_turn_get_an_error_result() -> None:
    history = [*history_with_tools(1)[:2], {"role": "user", "content": "again"}]
    messages = model_messages("", history, keep_tool_results_turns=3)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[2]["tool_call_id"] == "c0" and "not run" in messages[2]["content"]


def test_a_reused_call_id_does_not_hide_an_unanswered_call() -> None:
    first_turn = history_with_tools(1)
    stopped = [{"role": "user", "content": "u1"}, first_turn[1]]  # same id "c0", no result
    messages = model_messages("", [*first_turn, *stopped], keep_tool_results_turns=3)
    assert [m["role"] for m in messages][-3:] == ["user", "assistant", "tool"]
    assert "not run" in messages[-1]["content"]


def test_a_huge_message_is_shortened_for_the_model_only() -> None:
    huge = "first words " + "x" * 300_000 + " last question?"
    history = [{"role": "user", "content": huge}]
    [message] = model_messages("", history, keep_tool_results_turns=3)
    shown = message["content"]
    assert estimate_tokens(shown) <= MAX_MODEL_MESSAGE_TOKENS
    assert shown.startswith("first words ") and shown.endswith(" last question?")
    assert "characters of this message left out here" in shown
    assert history[0]["content"] == huge


@given(
    text=st.text(alphabet=st.sampled_from("ab \nпр中"), min_size=0, max_size=3_000),
    budget=st.integers(min_value=64, max_value=800),
)
def test_a_fitted_message_keeps_its_head_and_tail_within_the_budget(text: str, budget: int) -> None:
    shown = fit_message(text, budget)
    assert estimate_tokens(shown) <= budget
    if not is_cut(text, budget):
        assert shown == text
    else:
        head, _, tail = shown.partition("\n[... ")
        assert text.startswith(head)
        assert text.endswith(tail.split("...]\n", 1)[1])
