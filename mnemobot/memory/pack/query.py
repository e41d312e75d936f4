"""What a pack is built for: the message, its scope and time, and the limits it keeps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking
from mnemobot.memory.store.items import MemoryItem

_MEMORY_DEFAULTS = MemoryConfig()


@dataclass(slots=True)
class MemoryQuery:
    """What a pack is built for; budgets default to the runtime config's, topK limits to
    the ranking's (`for_config`)."""

    text: str
    scope: str
    now: float
    episodic_top_k: int = DEFAULT_RANKING.episodic_top_k
    semantic_top_k: int = DEFAULT_RANKING.semantic_top_k
    procedural_top_k: int = DEFAULT_RANKING.procedural_top_k
    working_top_k: int = DEFAULT_RANKING.working_top_k
    soft_budget_tokens: int = _MEMORY_DEFAULTS.soft_prompt_budget_tokens
    max_budget_tokens: int = _MEMORY_DEFAULTS.max_prompt_budget_tokens
    tags: list[str] = field(default_factory=list)
    # Days the message names ([start, end) epoch seconds): items of those days are
    # candidates and get `Ranking.date_match_boost`.
    date_ranges: tuple[tuple[float, float], ...] = ()
    # Items the request already carries (its conversation window): left out of the pack.
    carried: Callable[[MemoryItem], bool] | None = None
    # Standing preferences in force that the request does not carry (the chat's block
    # keeps the newest within its share): candidates when they share a word with the
    # message, however many other items share more.
    held_back_standing: tuple[MemoryItem, ...] = ()
    # The turn each of them was said in (standing id -> turn id): "I prioritize battery
    # life over graphics" was said asking for a laptop, and applies to laptops.
    standing_said_in: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_config(
        cls,
        text: str,
        scope: str,
        now: float,
        config: MemoryConfig,
        ranking: Ranking = DEFAULT_RANKING,
    ) -> MemoryQuery:
        return cls(
            text=text,
            scope=scope,
            now=now,
            episodic_top_k=ranking.episodic_top_k,
            semantic_top_k=ranking.semantic_top_k,
            procedural_top_k=ranking.procedural_top_k,
            working_top_k=ranking.working_top_k,
            soft_budget_tokens=config.soft_prompt_budget_tokens,
            max_budget_tokens=config.max_prompt_budget_tokens,
        )
