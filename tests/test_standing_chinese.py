"""Chinese standing requests and preferences are kept as their English equivalents are.

"从现在开始，不要用表情符号" and "请总是简短地回答我" were kept as nothing (the rules read no
order past "from now on", nor an adverb between "always" and the verb), while "我喜欢喝茶"
("I like drinking tea", no choice between answers) was carried in every request, where
"I like drinking tea" is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_standing_spanish import kept_as


@pytest.mark.parametrize(
    ("english", "chinese"),
    [
        ("From now on don't use emojis.", "从现在开始，不要用表情符号。"),
        ("Always answer me briefly.", "请总是简短地回答我。"),
        ("Never answer me with lists.", "永远不要用列表回答我。"),
        ("I prefer short answers.", "我更喜欢简短的回答。"),
        ("I like drinking tea.", "我喜欢喝茶。"),
        ("From now on I work from home.", "以后我在家工作。"),
        ("I always work carefully.", "我总是很认真地工作。"),
    ],
)
def test_a_chinese_standing_request_is_kept_as_its_english_is(
    tmp_path: Path, english: str, chinese: str
) -> None:
    kinds = []
    for name, said in (("en", english), ("zh", chinese)):
        workspace = tmp_path / name
        workspace.mkdir(mode=0o700)
        kinds.append(kept_as(workspace, said)[0])
    assert kinds[1] == kinds[0], (english, kinds)
