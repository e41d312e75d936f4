"""The BM25 term split: what a user's words turn into, and that it is a stable function."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.text_terms import STOPWORDS, stem, terms


def test_inflections_of_a_word_meet() -> None:
    assert terms("running") == terms("runs") == terms("run") == ["run"]
    assert terms("created") == terms("creating") == terms("creates") == ["create"]
    assert terms("studies") == terms("studied") == terms("study")
    assert terms("hoping") == terms("hope")
    assert terms("hopping") == terms("hop")
    assert terms("Matches") == terms("match")


def test_stopwords_and_punctuation_drop_out_numbers_stay() -> None:
    assert terms("When did Caroline go to the LGBTQ support group?") == [
        "caroline",
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert terms("version 3.14, port 8080") == ["version", "3", "14", "port", "8080"]
    assert terms("snake_case/kebab-case") == ["snake", "case", "kebab", "case"]


def test_contractions_and_possessives() -> None:
    assert terms("I don't like it's") == ["like"]
    assert terms("Caroline's dog") == ["caroline", "dog"]
    assert terms("Caroline’s dog") == ["caroline", "dog"]


def test_non_latin_words_are_kept_whole_and_cjk_is_split_per_character() -> None:
    assert terms("Привет, мир!") == ["привет", "мир"]
    assert terms("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert terms("我喜欢猫") == ["我", "喜", "欢", "猫"]
    assert terms("ＡＢＣ") == terms("abc") == ["abc"]


def test_stemming_is_conservative() -> None:
    # Short or vowel-less stems are not produced; non-ASCII words are not touched.
    assert stem("string") == "string"
    assert stem("thing") == "thing"
    assert stem("status") == "status"
    assert stem("analysis") == "analysis"
    assert stem("need") == "need"
    assert stem("família") == "família"


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_terms_is_a_fixed_point_on_its_own_output(text: str) -> None:
    first = terms(text)
    assert all(term and not term.isspace() for term in first)
    assert terms(" ".join(first)) == first
    assert not set(first) & STOPWORDS


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz'", min_size=1), max_size=8))
def test_english_like_words_are_stable(words: list[str]) -> None:
    first = terms(" ".join(words))
    assert terms(" ".join(first)) == first
    for term in first:
        assert stem(term) == term
