"""Scoring: recency, decay that never deletes, type boosts, and relevance dominating."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st
from pydantic.alias_generators import to_camel

from mnemobot.config import retired_keys
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, TypeBoosts
from mnemobot.memory.pack.scoring import (
    combined_score,
    decay_factor,
    normalized_relevance,
    recency_score,
    type_boost,
)
from mnemobot.memory.store.items import ItemType

AGES = st.floats(min_value=0, max_value=100_000, allow_nan=False)


def test_recency_halves_every_half_life() -> None:
    assert recency_score(0, 14) == 1.0
    assert recency_score(14, 14) == 0.5
    assert recency_score(28, 14) == 0.25
    assert recency_score(-3, 14) == 1.0  # a timestamp slightly in the future


@given(AGES, AGES)
def test_decay_is_monotone_and_never_reaches_zero(age: float, more: float) -> None:
    factor = decay_factor(age, 30, True)
    assert 0.5 <= factor <= 1.0
    assert decay_factor(age + more, 30, True) <= factor


def test_decay_is_smooth_and_can_be_switched_off() -> None:
    assert decay_factor(0, 30, True) == 1.0
    assert decay_factor(30, 30, True) == 0.75
    assert 0.5 < decay_factor(730, 30, True) < 0.5001
    assert decay_factor(730, 30, False) == 1.0
    assert decay_factor(730, 30, True, floor=0.2) < 0.21
    # No cliff: a day's difference changes the factor by little.
    assert abs(decay_factor(30, 30, True) - decay_factor(31, 30, True)) < 0.01


def test_type_boost_follows_the_ranking() -> None:
    assert type_boost(ItemType.CONSTRAINT) > type_boost(ItemType.COMMAND_RESULT)
    custom = TypeBoosts(command_result=0.2)
    assert type_boost(ItemType.COMMAND_RESULT, custom) == 0.2
    assert type_boost(ItemType.CONSTRAINT, custom) == 0.05


def test_relevance_is_bm25_above_the_shared_base_scaled_by_the_best() -> None:
    assert normalized_relevance(10.0, 4.0, 10.0) == 1.0
    assert normalized_relevance(7.0, 4.0, 10.0) == 0.5
    assert normalized_relevance(4.0, 4.0, 4.0) == 0.0


def test_relevance_dominates_the_other_terms() -> None:
    # The best match, old, unsalient and unsure, beats a half-as-relevant item that is
    # fresh, salient, certain and of the most boosted type.
    best_match = combined_score(1.0, 0.0, 0.0, 0.0, type_boost(ItemType.COMMAND_RESULT))
    weaker = combined_score(0.5, 1.0, 1.0, 1.0, type_boost(ItemType.CONSTRAINT))
    assert best_match > weaker
    # Between near-equal matches the smaller terms decide.
    assert combined_score(0.9, 1.0, 0.5, 0.65, 0) > combined_score(0.92, 0.0, 0.5, 0.65, 0)


def test_decay_lowers_but_does_not_zero_a_score() -> None:
    fresh = combined_score(1.0, 1.0, 0.5, 0.8, 0.02)
    old = combined_score(1.0, 0.0, 0.5, 0.8, 0.02, decay=decay_factor(730, 30, True))
    assert 0 < old < fresh


def test_the_ranking_keeps_the_values_its_old_settings_had() -> None:
    # memory.ranking was a section of the runtime config; its values moved into the code
    # unchanged (duplicateTermOverlap into memory.facts), so the bot ranks as before.
    old = dict(retired_keys.MEMORY["ranking"])  # type: ignore[call-overload]
    old["episodicTopK"], old["semanticTopK"] = 8, 6
    old["proceduralTopK"], old["workingTopK"] = 4, 6
    old["decayEnabled"], old["decayDays"] = True, 30.0
    assert old.pop("duplicateTermOverlap") == 0.8
    now = {to_camel(k): v for k, v in dataclasses.asdict(DEFAULT_RANKING).items()}
    now["typeBoost"] = {to_camel(k): v for k, v in now["typeBoost"].items()}
    # A day's digest is a type the old settings did not know: no boost.
    assert now["typeBoost"].pop("digest") == 0.0
    # Standing preferences the block has no room for came after the settings moved.
    assert now.pop("standingFirst") == 8
    assert now.pop("standingTopicWindowMinutes") == 120
    # As did the wants said in passing that a request for advice finds.
    assert now.pop("statedWantBoost") == 0.05
    assert now == old
