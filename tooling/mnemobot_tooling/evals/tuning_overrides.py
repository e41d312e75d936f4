"""`--tuning JSON` of the evals: other values of the pack's and the extraction's constants,
for an ablation ("what is turnsAroundHits worth?").

Not settings: the bot reads none of this. The keys are the fields of
`memory.pack.ranking.Ranking` ("ranking") and `memory.write.extraction.tuning.ExtractionTuning`
("extraction"), camelCase or snake_case, each checked by name and type; the values reach
the eval's `WorkspaceMemory.open(ranking=..., extraction=...)`.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal, TypeVar

import orjson
from pydantic.alias_generators import to_snake

from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning

T = TypeVar("T")


class TuningError(ValueError):
    """One line: which key is wrong and why."""


@dataclasses.dataclass(frozen=True, slots=True)
class EvalTuning:
    ranking: Ranking = DEFAULT_RANKING
    extraction: ExtractionTuning = DEFAULT_EXTRACTION


def tuning_from_json(text: str | None) -> EvalTuning:
    """The constants `text` changes, over the bot's own; raises TuningError."""
    if not text:
        return EvalTuning()
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise TuningError(f"not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise TuningError('must be a JSON object, e.g. {"ranking": {"turnsAroundHits": 0}}')
    unknown = sorted(set(raw) - {"ranking", "extraction"})
    if unknown:
        raise TuningError(f'{unknown[0]}: give "ranking" or "extraction"')
    return EvalTuning(
        ranking=_replaced(DEFAULT_RANKING, raw.get("ranking") or {}, "ranking"),
        extraction=_replaced(DEFAULT_EXTRACTION, raw.get("extraction") or {}, "extraction"),
    )


def _replaced(base: T, changes: Any, where: str) -> T:
    if not isinstance(changes, dict):
        raise TuningError(f"{where}: must be an object")
    assert dataclasses.is_dataclass(base) and not isinstance(base, type)
    fields = {field.name for field in dataclasses.fields(base)}
    hints = typing.get_type_hints(type(base))
    updates: dict[str, Any] = {}
    for key, value in changes.items():
        name = to_snake(key)
        if name not in fields:
            raise TuningError(f"{where}.{key}: no such constant in {type(base).__name__}")
        updates[name] = _checked(getattr(base, name), hints[name], value, f"{where}.{key}")
    return dataclasses.replace(base, **updates)


def _checked(current: Any, hint: Any, value: Any, where: str) -> Any:
    if dataclasses.is_dataclass(current):
        return _replaced(current, value, where)
    if typing.get_origin(hint) is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            raise TuningError(f"{where}: one of {', '.join(map(repr, allowed))}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise TuningError(f"{where}: true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TuningError(f"{where}: a whole number")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TuningError(f"{where}: a number")
        return float(value)
    raise TuningError(f"{where}: cannot be set here")
