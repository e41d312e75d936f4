"""The BM25 term split: what a user's words turn into, and that it is a stable function."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.text.scripts import CJK_CHAR
from mnemobot.memory.text.terms import (
    TEXT_END,
    _unicode_terms,
    languages,
    search_terms,
    terms,
    terms_in,
    terms_joined,
)


def test_inflections_of_a_word_meet() -> None:
    assert terms("running") == terms("runs") == terms("run") == ["run"]
    assert terms("created") == terms("creating") == terms("creates")
    assert terms("studies") == terms("studied") == terms("study")
    assert terms("hoping") == terms("hope")
    assert terms("hopping") == terms("hop")
    assert terms("Matches") == terms("match")


def test_stopwords_and_punctuation_drop_out_numbers_stay() -> None:
    assert terms("When did Caroline go to the LGBTQ support group?") == [
        *terms("Caroline"),
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert terms("version 3.14, port 8080") == ["version", "3", "14", "port", "8080"]
    assert terms("snake_case/kebab-case") == ["snake", "case", "kebab", "case"]


def test_contractions_and_possessives() -> None:
    assert terms("I don't like it's") == ["like"]
    assert terms("Caroline's dog") == [*terms("Caroline"), "dog"]
    assert terms("Caroline’s dog") == [*terms("Caroline"), "dog"]


def test_non_latin_words_are_stemmed_in_their_script_and_cjk_gives_chars_and_bigrams() -> None:
    assert terms("Привет, мир!") == ["привет", "мир"]
    assert terms("हिन्दी भाषा") == terms("हिन्दी") + terms("भाषा")
    assert len(terms("हिन्दी भाषा")) == 2
    # "我" is a stopword; what is left gives its characters and its bigrams.
    assert terms("我喜欢猫") == ["喜", "欢", "猫", "喜欢", "欢猫"]
    assert terms("ＡＢＣ") == terms("abc") == ["abc"]


def test_chinese_question_words_are_stopwords_and_queries_search_by_bigram() -> None:
    # "我们", "什么", "时候" are stopwords-iso's: a question keeps only what it asks about.
    assert terms("我们的航班什么时候到？") == ["航", "班", "航班"]
    assert terms("我对什么过敏？") == ["对", "过", "敏", "过敏"]
    # A query searches by its bigrams; a lone character still searches by itself.
    assert search_terms("我们的航班什么时候到？") == ["航班"]
    assert search_terms("猫?") == ["猫"]
    # A bigram no stored text has gives its characters back.
    stored = {"猫叫", "航班"}
    assert search_terms("猫呢？", stored.__contains__) == ["猫", "呢", "猫呢"]
    assert search_terms("猫叫什么", stored.__contains__) == ["猫叫"]
    assert search_terms("Где я работаю?") == terms("Где я работаю?") == ["работ"]


def test_a_chinese_question_finds_its_fact_and_not_every_line_sharing_a_character() -> None:
    stored = {
        "budget": "我们每天的预算大概八百元。",
        "booking": "记得预订餐厅。",
        "plan": "我打算下周去看医生。",
    }
    index = BM25Index()
    for doc_id, text in stored.items():
        index.add(doc_id, terms(text))
    hits = index.scores(search_terms("我们的预算是多少？", index.document_frequency))
    assert set(hits) == {"budget"}


def test_words_nothing_stems_stay_whole() -> None:
    assert terms("string thing status need") == ["string", "thing", "status", "need"]
    assert terms("família") == ["família"]


@settings(max_examples=400, deadline=None)
@given(st.text())
# An apostrophe between scripts: each side in its own script's language ("i" is English).
@example("ꀀ'I")
def test_terms_are_a_fixed_point_under_the_texts_languages(text: str) -> None:
    first = terms(text)
    assert all(term and not term.isspace() for term in first)
    again = terms_in(" ".join(first), languages(text))
    if any(map(CJK_CHAR.match, first)):
        # A CJK bigram read again also gives its characters (see `memory.text.terms`).
        assert set(again) == set(first)
    else:
        assert again == first
    assert _unicode_terms(text) == first


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz'", min_size=1), max_size=8))
def test_english_like_words_are_stable(words: list[str]) -> None:
    text = " ".join(words)
    first = terms(text)
    text_languages = languages(text)
    assert terms_in(" ".join(first), text_languages) == first
    for term in first:
        assert text_languages.latin.stem(term) == term
        assert term not in text_languages.latin.stopwords


@pytest.mark.parametrize(
    "text",
    [
        "When did Caroline go to the LGBTQ support group? She's been running there since 2021.",
        "Какого цвета моя Шкода? Я езжу на ней на работу, и мы с братом чиним её сами.",
        "Я їжджу на роботу на Шкоді, і мені це подобається.",
        "Η γιαγιά μου μένει στην Αθήνα και μαγειρεύει κάθε Κυριακή.",
    ],
)
def test_terms_of_terms_are_the_same_terms(text: str) -> None:
    # Texts whose languages the terms alone still tell: English, and scripts that name
    # their language. (A German text is German by its stopwords, which terms drop.)
    first = terms(text)
    assert first
    assert terms(" ".join(first)) == first


# ------------------------------------------------ the ASCII fast path and terms_joined

REPO = Path(__file__).resolve().parents[1]
# ASCII with what matters to the word split: letters of both cases, digits, apostrophes,
# underscores, punctuation, whitespace of every kind and control characters (TEXT_END too).
ASCII_TEXT = st.text(
    alphabet=st.sampled_from(
        [*"abcdeinrstyABCZ019'_-.,!?:;`\"()[]/\\@#", " ", "\t", "\n", "\r", "\x0b", "\x01"]
    ),
    max_size=60,
) | st.text(alphabet=st.characters(max_codepoint=127), max_size=40)


@settings(max_examples=500, deadline=None)
@given(ASCII_TEXT)
def test_ascii_fast_path_equals_the_unicode_reference(text: str) -> None:
    assert terms(text) == _unicode_terms(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(ASCII_TEXT | st.text(max_size=30), max_size=8))
def test_terms_joined_is_every_texts_terms_each_followed_by_the_end_mark(
    texts: list[str],
) -> None:
    expected: list[str] = []
    for text in texts:
        expected += _unicode_terms(text)
        expected.append(TEXT_END)
    assert list(terms_joined(texts)) == expected
    assert TEXT_END not in {term for text in texts for term in terms(text)}


def real_text_lines() -> list[str]:
    """Real text of many kinds that every checkout has: the README's and docs' prose,
    commands and tables, and the extraction rules of memory (English, German, Spanish, Russian and
    Chinese) with their code and comments."""
    rules = sorted((REPO / "mnemobot" / "memory" / "write" / "extraction").rglob("*.py"))
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *rules]
    return [line for path in files for line in path.read_text().splitlines() if line.strip()]


def test_real_text_gets_the_same_terms_on_every_path() -> None:
    texts = real_text_lines()
    assert len(texts) > 3000
    assert any(re.search("[\u0400-\u04ff]", text) for text in texts)  # Cyrillic
    assert any(re.search("[\u4e00-\u9fff]", text) for text in texts)  # Han
    reference = [_unicode_terms(text) for text in texts]
    assert [terms(text) for text in texts] == reference
    assert list(terms_joined(texts)) == [
        term for doc_terms in reference for term in [*doc_terms, TEXT_END]
    ]


def test_runs_with_several_words_split_by_apostrophes_keep_every_word() -> None:
    # "o''neil" is two words ("o", "neil"): the bulk path must not take it for one.
    texts = ["Pat o''neil and Sam's rock''n''roll", "plain text"]
    assert list(terms_joined(texts)) == [
        *_unicode_terms(texts[0]),
        TEXT_END,
        *_unicode_terms(texts[1]),
        TEXT_END,
    ]
    assert _unicode_terms(texts[0]) == ["pat", "o", "neil", "sam", "rock", "n", "roll"]
