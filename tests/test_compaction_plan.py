"""Where compaction cuts: tool pairs stay together, the newest user message stays."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemobot.conversation.session import Message
from mnemobot.systems.compaction.plan import SUMMARY_PREFIX, plan_compaction


def turn(i: int, tools: int) -> list[Message]:
    out: list[Message] = [{"role": "user", "content": f"u{i}"}]
    if tools:
        calls = [
            {"id": f"c{i}-{k}", "type": "function", "function": {"name": "t"}} for k in range(tools)
        ]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        out += [{"role": "tool", "tool_call_id": c["id"], "content": "r"} for c in calls]
    out.append({"role": "assistant", "content": f"a{i}"})
    return out


conversations = st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=15).map(
    lambda shape: [m for i, tools in enumerate(shape) for m in turn(i, tools)]
)


@given(conversations, st.integers(min_value=1, max_value=30), st.booleans())
def test_cut_never_splits_tool_pairs_and_loses_nothing(
    history: list[Message], keep: int, summarized: bool
) -> None:
    if summarized:
        history = [{"role": "system", "content": f"{SUMMARY_PREFIX}\nold"}, *history]
    plan = plan_compaction(history, keep)
    body = history[1:] if summarized else history
    assert plan.dropped + plan.kept == body
    assert (plan.previous_summary is not None) == summarized
    kept_calls = {c["id"] for m in plan.kept for c in m.get("tool_calls") or []}
    kept_results = {m["tool_call_id"] for m in plan.kept if m["role"] == "tool"}
    assert kept_results <= kept_calls
    dropped_calls = {c["id"] for m in plan.dropped for c in m.get("tool_calls") or []}
    assert not (dropped_calls & kept_results)
    last_user = max(i for i, m in enumerate(body) if m["role"] == "user")
    assert body[last_user] in plan.kept
    # The kept conversation opens with the user (strict chat templates require it) and
    # holds every message from the first user message among the last `keep` on.
    assert plan.kept[0]["role"] == "user"
    nominal = max(0, len(body) - keep)
    first_user = min(
        (i for i in range(nominal, len(body)) if body[i]["role"] == "user"), default=last_user
    )
    assert len(plan.kept) >= len(body) - first_user


def test_keeps_the_newest_user_message_even_when_keep_is_one() -> None:
    history = turn(0, 0) + turn(1, 2)
    plan = plan_compaction(history, 1)
    assert plan.kept[0] == {"role": "user", "content": "u1"}
    assert [m["role"] for m in plan.kept] == ["user", "assistant", "tool", "tool", "assistant"]
